"""``imf sweep --cancel DIR`` on local slots: the controller stops, every job is killed, and
``--resume`` starts the cancelled trials again."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _sweep_helpers import sweep_controller, wait_for

from imf.sweep.launch import resume_sweep

pytestmark = pytest.mark.slow


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_cancel_kills_every_local_job_and_resume_starts_them_again(tmp_path):
    controller = sweep_controller(tmp_path, "c", ["--epoch-s", "0.2"], "--grid", "64x1,2", "--queue",
                                  "local:cpu", "--queue", "local:cpu", "--epochs", "40", "--poll", "0.2",
                                  "--stall-timeout", "300")
    sweep_dir = tmp_path / "c"

    def both_running():
        try:
            trials = json.loads((sweep_dir / "sweep.json").read_text())["trials"]
        except (OSError, ValueError):
            return None
        pids = [(sweep_dir / t["id"] / "fake.pid") for t in trials if t["state"] == "running"]
        if len(pids) < 2 or not all(p.is_file() and p.read_text().strip() for p in pids):
            return None
        return [int(p.read_text()) for p in pids]
    try:
        pids = wait_for(both_running, timeout=120, interval=0.1)
        proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "--cancel", str(sweep_dir)],
                              capture_output=True, text=True, timeout=300)
        controller.wait(120)
    finally:
        if controller.poll() is None:
            controller.kill()
    assert proc.returncode == 0, proc.stderr
    assert "cancelled 2 trial(s)" in proc.stdout
    assert not any(_alive(pid) for pid in pids)
    data = json.loads((sweep_dir / "sweep.json").read_text())
    assert data["status"] == "interrupted"
    assert [t["history"][-1]["outcome"] for t in data["trials"]] == ["cancelled", "cancelled"]
    resume_sweep(sweep_dir, lambda s: None)
    data = json.loads((sweep_dir / "sweep.json").read_text())
    assert all(t["state"] == "completed" and t["attempts"] == 2 for t in data["trials"])


def test_cancel_of_a_folder_without_a_sweep_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "--cancel", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "no sweep.json here" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "--cancel", str(tmp_path), "--queue",
                           "local:cpu", "--seeds", "1,2", "--poll", "3"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "--cancel DIR takes no other sweep arguments; drop --queue, --seeds, --poll" in proc.stderr
