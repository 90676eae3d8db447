"""A sweep job never starts in (or moves the files of) a run folder that a live trial owns."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from _sweep_helpers import fake_command

from imf.errors import FolderInUseError
from imf.scheduler.base import JobRequest, scheduler_for
from imf.sweep.launch import SweepRequest, start_sweep
from imf.store.runlock import LOCK, Holder, process_start_time

pytestmark = pytest.mark.slow  # runs the job scripts (sh) and a controller


def _owned(folder: Path) -> dict[str, bytes]:
    """``folder`` owned by pid 1 (alive as long as we are), with a file of its own."""
    folder.mkdir(parents=True)
    (folder / LOCK).write_text(Holder(1, process_start_time(1), socket.gethostname(),
                                      "2026-12-01T00:00:00+00:00", "someone-else").line())
    (folder / "logs.json.txt").write_text('{"epoch": 0}\n')
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_local_job_is_refused_in_a_folder_a_live_trial_owns(tmp_path):
    run = tmp_path / "t1"
    before = _owned(run)
    sch = scheduler_for("local:cpu", {})
    job = JobRequest("t1", "s", run, ["sh", "-c", "echo ran > ran.txt"], "smoke", token="abc")
    with pytest.raises(FolderInUseError, match=r"in use by trial someone-else \(pid 1 on "):
        sch.start(job)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # nothing moved, nothing ran


def test_the_sweep_fails_that_attempt_naming_the_owner_and_never_stops_it(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.05"))
    req = SweepRequest(config="smoke", grids=["64x1,2"], queues=["local:cpu"], name="t", out=tmp_path,
                       epochs=2, poll=0.1, stall_timeout=30.0, retries=0)
    before = _owned(tmp_path / "t" / "t-causal-e64-l1-s42")
    start_sweep(req, lambda line: None)
    trials = {t["id"]: t for t in json.loads((tmp_path / "t" / "sweep.json").read_text())["trials"]}
    trial = trials["t-causal-e64-l1-s42"]
    assert trial["state"] == "failed" and "in use by trial someone-else" in trial["reason"]
    assert trials["t-causal-e64-l2-s42"]["state"] == "completed"  # the other trial is unaffected
    assert os.path.exists("/proc/1")
    run = tmp_path / "t" / "t-causal-e64-l1-s42"
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.name in before} == before
