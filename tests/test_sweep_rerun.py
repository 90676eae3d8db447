"""``imf sweep --rerun failed DIR``: just the failed (diverged, stalled) points run again, inside
the same sweep, as new attempts of the same trials, exactly once; the report shows attempts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _sweep_helpers import fake_command
from imf_process import run_in_process

from imf.sweep.launch import SweepRequest, plan_sweep, start_sweep
from imf.sweep.rerun import parse_rerun

FAILS = "t-causal-e64-l1-s42"  # the point the stand-in trial fails on purpose
GOOD = "t-causal-e64-l2-s42"


def _request(tmp_path: Path, **kw) -> SweepRequest:
    base = dict(config="smoke", grids=["64x1,2"], queues=["local:cpu"], name="t", out=tmp_path,
                epochs=2, poll=0.1, stall_timeout=60.0, retries=1)
    return SweepRequest(**{**base, **kw})


def _files(folder: Path) -> dict[str, bytes]:
    """Every file's bytes (the controller's empty lock file is no state)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "sweep.lock"}


def _trials(sweep_dir: Path) -> dict[str, dict]:
    return {t["id"]: t for t in json.loads((sweep_dir / "sweep.json").read_text())["trials"]}


def test_states_to_rerun_are_checked():
    assert parse_rerun("failed, stalled,failed") == ("failed", "stalled")
    for bad in ("", "completed", "failed,bogus"):
        with pytest.raises(Exception, match="expected one or more of failed, diverged, stalled"):
            parse_rerun(bad)


def test_bad_rerun_requests_are_one_line_and_write_nothing(tmp_path, monkeypatch, capsys):
    sdir, state, _ = plan_sweep(_request(tmp_path))
    for trial in state.trials:
        trial.state, trial.attempts = "completed", 1
    sdir.save(state)
    before = _files(sdir.path)
    for args, says in ((["--rerun", "bogus", str(sdir.path)], "expected one or more of failed"),
                       (["--rerun", "failed"], "takes one sweep folder"),
                       (["--rerun", "failed", str(sdir.path), "--grid", "32x1"], "drop --grid"),
                       (["--rerun", "failed,stalled", str(sdir.path)],
                        "has no failed or stalled trial to rerun (2 completed); nothing was changed")):
        code, _, err = run_in_process(monkeypatch, capsys, "sweep", *args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1 and says in err, err
    assert _files(sdir.path) == before


@pytest.mark.slow
def test_a_rerun_runs_only_the_failed_point_as_its_next_attempts(tmp_path, monkeypatch, capsys):
    # attempts 1-3 of FAILS fail: the sweep (retries 1) ends it failed after 2; the rerun's first
    # attempt (3) fails and is retried (its retries counted anew), attempt 4 completes
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02", "--fail-on", "e64-l1",
                                                         "--fail-times", "3"))
    sweep_dir = tmp_path / "t"
    start_sweep(_request(tmp_path), lambda line: None)
    assert _trials(sweep_dir)[FAILS]["state"] == "failed"
    good_files = _files(sweep_dir / GOOD)
    code, out, err = run_in_process(monkeypatch, capsys, "sweep", "--rerun", "failed", str(sweep_dir))
    assert code == 0, err
    trials = _trials(sweep_dir)
    rerun, good = trials[FAILS], trials[GOOD]
    assert rerun["state"] == "completed" and rerun["attempts"] == 4 and rerun["recorded"]
    assert [h["outcome"] for h in rerun["history"]] == ["failed"] * 3 + ["completed"]
    assert [(r["was"], r["after_attempt"], r["history"]) for r in rerun["reruns"]] == [("failed", 2, 2)]
    assert good["attempts"] == 1 and _files(sweep_dir / GOOD) == good_files  # not touched
    assert sorted(p.name for p in (sweep_dir / FAILS / "attempts").iterdir()) == ["1", "2", "3"]
    log = (sweep_dir / "sweep.log").read_text()
    assert f"1 failed trial(s) run again ({FAILS})" in log and log.count(f"start {GOOD}") == 1
    report = (sweep_dir / "report.md").read_text()
    assert f"{FAILS}: 4 attempts (1 failed, 2 failed, rerun, 3 failed, 4 completed)" in report
    assert "attempts" in out  # the report printed at the end says so too


@pytest.mark.slow
def test_a_rerun_killed_after_marking_runs_each_trial_once(tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02", "--fail-on", "e64-l1",
                                                         "--ledger", str(ledger)))
    sweep_dir = tmp_path / "t"
    start_sweep(_request(tmp_path, retries=0), lambda line: None)
    assert ledger.read_text().split()[0] == GOOD
    cmd = [sys.executable, "-m", "imf", "sweep", "--rerun", "failed", str(sweep_dir)]
    killed = subprocess.run(cmd, env={**os.environ, "IMF_DRILL_KILL": "rerun-marked:1"},
                            capture_output=True, timeout=600)
    assert killed.returncode == -9
    assert _trials(sweep_dir)[FAILS]["state"] == "pending"  # marked, not started
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    trial = _trials(sweep_dir)[FAILS]
    assert trial["state"] == "completed" and trial["attempts"] == 2 and len(trial["reruns"]) == 1
    assert sorted(line.split()[0] for line in ledger.read_text().splitlines()) == sorted([GOOD, FAILS])
    third = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert third.returncode == 2 and "has no failed trial to rerun" in third.stderr
