"""Exactly once, under any timing: the controller SIGKILLed at each step of a trial's start and
end, then resumed; no trial runs twice and its records agree (benchmarks/drills_once.py, one
round per kill point here; the benchmark runs many)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real controllers and stand-in trials

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_a_controller_killed_at_every_step_of_a_start_or_an_end_runs_each_trial_once():
    from drills_once import run
    done, failed, problems = run(rounds=1, seed=1)
    assert done == 6 and failed == 0, problems


def test_a_claimed_start_is_waited_for_and_a_stale_child_never_runs(tmp_path):
    from imf.scheduler import wrapper
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "claim").write_text("new\n")
    code = wrapper.run_attempt(folder, "old", [sys.executable, "-c", "open('ran', 'w')"])
    assert code == 0 and not (folder / "ran").exists() and not (folder / "pid").exists()
    import os, time
    old = time.time() - wrapper.PID_WAIT_S - 1
    os.utime(folder / "claim", (old, old))  # a claim older than the wait: read as it is
    assert wrapper.probe(folder, 0, 10)["pid"] is None
