"""A full disk blocks the queue that hit it, never burns the trial's retries; --resume retries."""
from __future__ import annotations

import json

import pytest
from _sweep_helpers import fake_command

from imf.errors import SweepError
from imf.sweep.status import render_status
from imf.sweep.folder import SweepDir
from imf.sweep.launch import SweepRequest, resume_sweep, start_sweep

pytestmark = pytest.mark.slow  # real controller, real stand-in trial processes


def test_a_full_disk_blocks_its_queues_keeps_retries_and_resume_finishes(tmp_path, monkeypatch):
    full = tmp_path / "disk-is-full"
    full.write_text("")
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.05", "--disk-full-while", str(full)))
    req = SweepRequest(config="smoke", grids=["64x1,2"], queues=["local:cpu", "local:cpu"], name="t",
                       out=tmp_path, epochs=3, poll=0.1, stall_timeout=30.0, retries=1)
    lines: list[str] = []
    with pytest.raises(SweepError, match="every queue is down or blocked") as err:
        start_sweep(req, lines.append)
    assert "disk full" in str(err.value)
    sweep = tmp_path / "t"
    data = json.loads((sweep / "sweep.json").read_text())
    assert [q["state"] for q in data["queues"]] == ["blocked", "blocked"]
    for trial in data["trials"]:
        assert trial["state"] == "pending", trial
        assert {h["outcome"] for h in trial["history"]} == {"disk full"}
        assert all(h["exit_code"] == 75 for h in trial["history"])
    log = (sweep / "sweep.log").read_text()
    assert "is blocked: disk full: imf: error: no space left on device" in log
    status = render_status(SweepDir(sweep))
    assert "is blocked: disk full" in status

    full.unlink()  # space freed
    resume_sweep(sweep, echo=lines.append)
    data = json.loads((sweep / "sweep.json").read_text())
    assert data["status"] == "finished"
    for trial in data["trials"]:
        assert trial["state"] == "completed", trial
        assert trial["history"][-1]["outcome"] == "completed"
        assert sum(h["outcome"] == "failed" for h in trial["history"]) == 0  # retries untouched
