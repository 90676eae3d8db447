"""End to end: `imf sweep` running real `imf trial smoke` processes to the report (slow)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from imf.store.scoreboard import ScoreboardStore


@pytest.mark.slow
def test_a_smoke_sweep_of_real_trials_ends_with_the_report(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IMF_TRIAL_COMMAND"}
    env.setdefault("SWANLAB_MODE", "offline")
    cmd = [sys.executable, "-m", "imf", "sweep", "smoke", "--grid", "32,64x1", "--queue", "local:cpu",
           "--queue", "local:cpu", "--name", "real", "--out", str(tmp_path), "--epochs", "1",
           "--poll", "1", "--stall-timeout", "600"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sweep_dir = tmp_path / "real"
    data = json.loads((sweep_dir / "sweep.json").read_text())
    assert data["status"] == "finished"
    assert [t["state"] for t in data["trials"]] == ["completed", "completed"]
    assert {r["id"] for r in ScoreboardStore(sweep_dir).read()} == {t["id"] for t in data["trials"]}
    for name in ("report.md", "report.json", "report.csv"):
        assert (sweep_dir / name).is_file()
    assert "rank" in proc.stdout  # the report is printed at the end
    for t in data["trials"]:
        run = sweep_dir / t["id"]
        summary = json.loads((run / "summary.json").read_text())
        assert summary["id"] == t["id"] and summary["epochs_done"] == 1
        assert (run / summary["checkpoints"]["best"]).is_file()
        assert f"trial {t['id']}: completed" in (run / "stdout.log").read_text()
