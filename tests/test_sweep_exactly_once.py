"""Exactly once under any timing (issue #49): a controller that dies in the middle of a trial's
start or end, then resumed, never runs the trial twice and leaves one consistent record.

The death is made in this process: the patched call raises ``Died`` (a BaseException that no
handler of the engine catches), so nothing after that write happens, as after a SIGKILL.
benchmarks/drills/drills_once.py does the same with real SIGKILLs at every write.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from _sweep_helpers import fake_command, wait_for

from imf.sweep import outcomes
from imf.sweep.launch import SweepRequest, resume_sweep, start_sweep
from imf.sweep.recovery import Recovery
from imf.store.layout import PID

pytestmark = pytest.mark.slow  # starts processes


class Died(BaseException):
    """The controller's death at the patched call."""


def _request(tmp_path: Path, grid: str = "64x1") -> SweepRequest:
    return SweepRequest(config="smoke", grids=[grid], queues=["local:cpu"], name="t", out=tmp_path,
                        epochs=2, poll=0.05, stall_timeout=60.0)


def _ran_once(sweep_dir: Path, ledger: Path) -> None:
    """Every trial completed in one attempt with one history entry, ran to its end once, was
    never moved aside for a second start, and is recorded once."""
    data = json.loads((sweep_dir / "sweep.json").read_text())
    assert data["status"] == "finished"
    ids = sorted(t["id"] for t in data["trials"])
    for t in data["trials"]:
        assert t["state"] == "completed" and t["recorded"], t
        assert t["attempts"] == 1 and [h["outcome"] for h in t["history"]] == ["completed"], t
        assert not (sweep_dir / t["id"] / "attempts").exists()
    assert sorted(line.split()[0] for line in ledger.read_text().splitlines()) == ids
    board = json.loads((sweep_dir / "scoreboard.json").read_text())["trials"]
    assert sorted(r["id"] for r in board) == ids and all(r["attempt"] == 1 for r in board)


def test_a_controller_that_dies_as_its_trial_spawns_never_runs_the_trial_twice(tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01", "--ledger", str(ledger)))
    real_popen, spawned = subprocess.Popen, []

    def spawn_then_die(args, *rest, **kw):
        child = real_popen(args, *rest, **kw)
        if "imf.scheduler.wrapper" in args and not spawned:
            os.kill(child.pid, signal.SIGSTOP)  # a slow start: its pid file is not written yet
            spawned.append(child)
            raise Died  # the controller dies before it writes the pid file itself
        return child

    monkeypatch.setattr(subprocess, "Popen", spawn_then_die)
    with pytest.raises(Died):
        start_sweep(_request(tmp_path), lambda s: None)
    monkeypatch.setattr(subprocess, "Popen", real_popen)
    (child,) = spawned
    sweep_dir = tmp_path / "t"
    assert json.loads((sweep_dir / "sweep.json").read_text())["trials"][0]["state"] == "starting"

    reattach = Recovery.reattach_all

    def reattach_then_wake(self):
        reattach(self)  # the resumed controller looked: no pid file
        os.kill(child.pid, signal.SIGCONT)  # now the old start goes on
        run_dir = sweep_dir / self.state.trials[0].id
        wait_for(lambda: child.poll() is not None or (run_dir / PID).is_file(), timeout=60)

    monkeypatch.setattr(Recovery, "reattach_all", reattach_then_wake)
    resume_sweep(sweep_dir, lambda s: None)
    wait_for(lambda: child.poll() is not None, timeout=60)
    _ran_once(sweep_dir, ledger)


def test_a_controller_that_dies_after_recording_a_trial_records_it_once(tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01", "--ledger", str(ledger)))
    record = outcomes.record_trial

    def record_then_die(*args):
        problems = record(*args)
        raise Died  # the stores hold it; sweep.json may not say so yet

    monkeypatch.setattr(outcomes, "record_trial", record_then_die)
    with pytest.raises(Died):
        start_sweep(_request(tmp_path), lambda s: None)
    monkeypatch.setattr(outcomes, "record_trial", record)
    resume_sweep(tmp_path / "t", lambda s: None)
    _ran_once(tmp_path / "t", ledger)
    log = (tmp_path / "t" / "sweep.log").read_text()
    assert log.count(" start ") == 1
