"""`imf status` tells the truth without a controller: who is gone, each trial's state from its
own files, the command that resumes; and progress inside a long epoch."""
from __future__ import annotations

import json
import socket
import time

from imf.store.summary import RunSummary
from imf.sweep.folder import SweepDir
from imf.sweep.launch import SweepRequest, plan_sweep
from imf.sweep.status import render_status, trial_row

DEAD_PID = 2 ** 22 - 3  # above any pid this test machine hands out (pid_max is 4194304 at most)


def _sweep(tmp_path):
    req = SweepRequest(config="smoke", grids=["32x1,2"], queues=["local:cpu"], name="st", out=tmp_path)
    sdir, state, _ = plan_sweep(req)
    sdir.path.mkdir(parents=True)
    state.status = "running"
    state.controller = {"pid": DEAD_PID, "host": socket.gethostname()}
    for trial in state.trials:
        trial.state, trial.started_unix = "running", time.time() - 3600
    sdir.save(state)
    return sdir, state


def test_a_dead_controller_is_named_and_its_trials_read_from_their_own_files(tmp_path):
    sdir, state = _sweep(tmp_path)
    done, _ = state.trials
    run = sdir.trial_dir(done.id)
    run.mkdir()
    RunSummary(id=done.id, status="completed", epochs_done=4, num_epochs=4, best_score=0.5,
               elapsed_s=61.0).write(run)
    text = render_status(sdir)
    assert f"controller pid {DEAD_PID} on {socket.gethostname()} is not running" in text
    assert f"imf sweep --resume {sdir.path}" in text
    row = next(line for line in text.splitlines() if done.id in line)
    assert "completed (its files)" in row and "4/4" in row and "1:01" in row
    other = next(line for line in text.splitlines() if state.trials[1].id in line)
    assert "no summary.json; controller gone" in other


def test_a_long_epoch_shows_its_step_rate_and_eta(tmp_path):
    sdir, state = _sweep(tmp_path)
    trial = state.trials[0]
    run = sdir.trial_dir(trial.id)
    run.mkdir()
    now = time.time()
    (run / "progress.json").write_text(json.dumps({"epoch": 0, "step": 50, "steps": 250,
                                                   "steps_per_s": 2.0, "updated": now}))
    row = trial_row(trial, now, run)
    assert "step 50/250, 2.00 it/s" in row[2]
    assert row[-1] != "-"  # an ETA from the epoch's own rate
    stale = trial_row(trial, now + 3600, run)
    assert "step" not in stale[2]


def test_the_trial_writes_its_progress_at_most_every_period(tmp_path):
    from imf.train.runfiles import ProgressFile
    progress = ProgressFile(tmp_path / "progress.json", period_s=0.0)
    progress.begin(epoch=3, steps=100)
    progress.tick(10)
    data = json.loads((tmp_path / "progress.json").read_text())
    assert (data["epoch"], data["step"], data["steps"]) == (3, 10, 100) and data["steps_per_s"] > 0
    slow = ProgressFile(tmp_path / "slow.json", period_s=3600.0)
    slow.begin(epoch=0, steps=100)
    slow.tick(1)
    assert not (tmp_path / "slow.json").exists()  # within the period: nothing written


def test_two_queues_naming_one_gpu_are_refused_in_the_plan():
    import pytest
    from imf.errors import QueueError
    from imf.sweep.queues import resolve_queues
    with pytest.raises(QueueError, match="name the same GPU"):
        resolve_queues(["ssh://me@box/gpu:0", "ssh://other@BOX/gpu:0"], {})
    with pytest.raises(QueueError, match="name the same GPU"):
        resolve_queues(["local:0", "local:0"], {})
    assert len(resolve_queues(["ssh://me@box/gpu:0", "ssh://me@box/gpu:1", "ssh://me@box2/gpu:0",
                               "local:cpu", "local:cpu"], {})) == 5


@__import__("pytest").mark.slow
def test_a_sweep_with_a_failed_trial_exits_1_naming_it(tmp_path):
    import os
    from _sweep_helpers import fake_command
    from imf_process import run_imf
    env = {"IMF_TRIAL_COMMAND": fake_command("--epoch-s", "0.01", "--fail-on", "e32-l1", "--fail-times", "9")}
    out = run_imf("sweep", "smoke", "--grid", "32x1,2", "--epochs", "1", "--retries", "0", "--poll", "0.1",
                  "--queue", "local:cpu", "--name", "f", "--out", str(tmp_path), cwd=tmp_path, env=env)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "1 trial(s) failed or stalled (f-causal-e32-l1-s42)" in lines[0], out.stderr
    assert os.path.isfile(tmp_path / "f" / "report.md")  # the report is still written


@__import__("pytest").mark.slow
def test_a_queue_whose_python_cannot_load_the_sweeps_plugins_stops_the_start(tmp_path, monkeypatch):
    import sys
    import pytest
    from plugin_fakes import fake_distribution
    from imf import registry
    from imf.errors import SweepError
    from imf.sweep.launch import SweepRequest, dry_run
    site = fake_distribution(tmp_path / "site", "imf-broken", "imf_broken_mask",
                             "import os\nif os.environ.get('IMF_TEST_BROKEN_HOST'):\n"
                             "    raise ImportError('this host has no numpy of the right version')\n"
                             "from imf.attention import causal as mask\n",
                             {"imf.masks": {"brokenmask": "imf_broken_mask:mask"}})
    monkeypatch.syspath_prepend(str(site))
    registry.clear_cache()
    slot_python = tmp_path / "python"  # another interpreter for the slot: the check runs it
    slot_python.write_text(f"#!/bin/sh\nIMF_TEST_BROKEN_HOST=1 PYTHONPATH={site} exec {sys.executable} \"$@\"\n")
    slot_python.chmod(0o755)
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(f"defaults:\n  python: {slot_python}\n")
    req = SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu"], hosts=str(hosts),
                       mask="brokenmask", name="p", out=tmp_path / "runs")
    with pytest.raises(SweepError, match=r"no queue passed its check: local:cpu: .*cannot load imf.masks plugin 'brokenmask'.*ImportError: this host"):
        dry_run(req)
    registry.clear_cache()


def test_a_program_trial_without_planned_epochs_shows_its_epoch_alone_and_no_eta():
    """A command trainer's trial plans no epochs (0): its row says the epochs it logged, never
    "4/0", and guesses no time left."""
    from imf.sweep.state import TrialState
    trial = TrialState("p", [], 1, 0, {}, 1.0, "local:cpu", state="running", epoch=4)
    trial.elapsed_s = 40.0
    row = trial_row(trial, time.time())
    assert row[3] == "4" and row[-1] == "-"
