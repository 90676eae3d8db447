"""Preemption as the engine reads Slurm (issue #45 item 4): a job back in the queue after it ran
is a new attempt that resumes; a suspended one is not; a job whose node died is resumed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading

import pytest
from _sweep_helpers import SSHD, fake_command, start_sshd, wait_for

from imf.scheduler.slurm_status import Progress, slurm_status
from imf.scheduler.base import scheduler_for
from imf.sweep.launch import SweepRequest, resume_sweep, start_sweep

RAN = Progress(None, 120, 80, "")


def test_a_job_back_in_the_queue_is_requeued_and_a_suspended_one_is_not():
    for state in ("PENDING", "REQUEUED", "REQUEUE_HOLD"):
        status = slurm_status("7", state, "BeginTime", RAN)
        assert (status.state, status.requeued) == ("queued", True), state
    for state in ("SUSPENDED", "STOPPED"):
        status = slurm_status("7", state, "None", RAN)
        assert (status.state, status.requeued) == ("queued", False), state


def test_a_job_whose_node_died_or_was_preempted_is_resumed_by_its_retry():
    for state in ("NODE_FAIL", "PREEMPTED", "TIMEOUT"):
        status = slurm_status("7", state, "", RAN)
        assert status.done and status.resume and f"with {state}" in status.reason, state
    failed = slurm_status("7", "FAILED", "", Progress(1, 0, 0, ""))
    assert failed.state == "exited" and not failed.resume


def _running(tmp_path, log_offset: int):
    from imf.scheduler.base import Handle
    from imf.sweep.engine import Engine
    from imf.sweep.launch import SweepRequest, plan_sweep
    sdir, state, _ = plan_sweep(SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu"],
                                             name="p", out=tmp_path))
    trial = state.trials[0]
    trial.state, trial.attempts, trial.log_offset, trial.epoch = "running", 1, log_offset, 3
    trial.handle = Handle("local:cpu", str(tmp_path), str(tmp_path), "tok", 42, "1", {"job_id": "7"})
    return Engine(sdir, state, echo=lambda line: None), trial


def test_a_running_job_back_in_the_queue_counts_an_attempt_once_and_is_read_again(tmp_path):
    engine, trial = _running(tmp_path, log_offset=500)
    requeued = slurm_status("7", "PENDING", "BeginTime", RAN)
    engine.watcher.watch(trial, requeued)
    assert (trial.state, trial.attempts, trial.log_offset, trial.epoch) == ("queued", 2, 0, 0)
    assert [h["outcome"] for h in trial.history] == ["preempted"]
    assert "job 7 was requeued (BeginTime)" in trial.history[0]["reason"]
    engine.watcher.watch(trial, requeued)  # still waiting: the same attempt
    assert trial.attempts == 2 and len(trial.history) == 1
    assert "preempted p-causal-e32-l1-s42" in (tmp_path / "p" / "sweep.log").read_text()


def test_a_job_that_never_ran_or_is_suspended_is_only_waiting(tmp_path):
    engine, trial = _running(tmp_path, log_offset=0)  # submitted, not started yet
    engine.watcher.watch(trial, slurm_status("7", "PENDING", "Priority", RAN))
    assert (trial.state, trial.attempts, trial.history) == ("queued", 1, [])
    engine, trial = _running(tmp_path / "s", log_offset=500)
    engine.watcher.watch(trial, slurm_status("7", "SUSPENDED", "None", RAN))
    assert (trial.state, trial.attempts, trial.history) == ("queued", 1, [])


@pytest.mark.slow
def test_a_job_whose_host_died_resumes_from_its_latest_checkpoint_as_its_next_attempt(tmp_path, monkeypatch):
    # The host "dies" under the job: its wrapper and trial are SIGKILLed together (no exit code).
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.3"))
    req = SweepRequest(config="smoke", grids=["64x1"], queues=["local:cpu"], name="hd", out=tmp_path,
                       epochs=8, poll=0.2, stall_timeout=120, retries=1)
    errors: list = []
    thread = threading.Thread(target=lambda: _run(req, errors), daemon=True)
    thread.start()
    run = tmp_path / "hd" / "hd-causal-e64-l1-s42"
    wait_for(lambda: (run / "checkpoints" / "latest.pt").is_file()
             and int((run / "checkpoints" / "latest.pt").read_text().split()[1]) >= 2, timeout=120)
    os.killpg(int((run / "pid").read_text().split()[0]), signal.SIGKILL)
    thread.join(300)
    assert not thread.is_alive() and not errors, errors
    trial = json.loads((tmp_path / "hd" / "sweep.json").read_text())["trials"][0]
    assert trial["state"] == "completed" and trial["attempts"] == 2
    assert [h["outcome"] for h in trial["history"]] == ["lost", "completed"]
    assert "a retry resumes it from its latest checkpoint" in trial["history"][0]["reason"]
    out = (run / "stdout.log").read_text()
    assert "imf: resuming from checkpoints/latest.pt" in out and "resumed at epoch" in out
    assert not (run / "attempts").exists()  # resumed in place, not started over
    epochs = [json.loads(line)["epoch"] for line in (run / "logs.json.txt").read_text().splitlines()]
    assert epochs[0] == 0 and epochs[-1] == 7 and epochs == sorted(epochs)


def _run(req, errors: list) -> None:
    try:
        start_sweep(req, lambda line: None)
    except BaseException as exc:  # handed to the test
        errors.append(exc)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(SSHD), reason=f"no sshd at {SSHD}")
def test_a_trial_whose_ssh_host_died_resumes_there_from_its_latest_checkpoint(tmp_path, monkeypatch):
    server = start_sshd(tmp_path / "sshd")  # its own sshd: this test takes it away
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.3"))
    hosts = server.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote", gpus=None)
    req = SweepRequest(config="smoke", grids=["64x1"], queues=[server.spec("cpu")], hosts=str(hosts),
                       name="hd", out=tmp_path / "runs", epochs=8, poll=0.1, stall_timeout=120, retries=1)
    errors: list = []
    thread = threading.Thread(target=lambda: _run(req, errors), daemon=True)
    thread.start()
    remote = tmp_path / "remote" / "hd" / "hd-causal-e64-l1-s42"
    try:
        wait_for(lambda: (remote / "checkpoints" / "latest.pt").is_file()
                 and int((remote / "checkpoints" / "latest.pt").read_text().split()[1]) >= 2, timeout=120)
        server.stop()  # the host goes away with its job
        os.killpg(int((remote / "pid").read_text().split()[0]), signal.SIGKILL)
        subprocess.run(scheduler_for(server.spec("cpu"), server.host_options(tmp_path)).control_argv("exit"),
                       capture_output=True, timeout=30)
        thread.join(120)
        assert errors and "every queue is down" in str(errors[0])
        server.restart()  # back after its reboot: the resume finds the job gone, and resumes it
        resume_sweep(tmp_path / "runs" / "hd", lambda line: None)
    finally:
        server.stop()
    trial = json.loads((tmp_path / "runs" / "hd" / "sweep.json").read_text())["trials"][0]
    assert trial["state"] == "completed" and trial["attempts"] == 2, trial["history"]
    assert [h["outcome"] for h in trial["history"]] == ["queue down", "orphan ignored", "completed"]
    home = tmp_path / "runs" / "hd" / trial["id"]
    out = (home / "stdout.log").read_text()
    assert "imf: resuming from checkpoints/latest.pt" in out and "resumed at epoch" in out
    assert not (remote / "attempts").exists()  # the job resumed in place on its host
    # At home, the first attempt's copy (its latest.pt came home while it ran, if a poll came
    # before the host died) is kept as attempt 1, never mixed into the resumed one's files.
    kept = sorted(p.name for p in (home / "attempts").iterdir()) if (home / "attempts").exists() else []
    assert kept in ([], ["1"]), kept


def test_a_resumed_attempt_still_rescored_on_the_selection_seeds(tmp_path):
    # a trial resumed after a preemption or a lost host must leave final_eval.json like the rest
    from imf.sweep.engine import Engine
    from imf.sweep.launch import plan_sweep
    sdir, state, _ = plan_sweep(SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu"], name="fe",
                                             out=tmp_path, final_eval=4))
    trial = state.trials[0]
    trial.history = [{"attempt": 1, "outcome": "lost"}]
    job = Engine(sdir, state, echo=lambda line: None).job_request(trial)
    assert job.resume and job.resume_argv[-2:] == ["--final-eval", "4"]
    assert job.argv[-2:] == ["--final-eval", "4"]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(SSHD), reason=f"no sshd at {SSHD}")
def test_a_trial_whose_ssh_host_died_resumes_on_another_queue_from_the_latest_pt_kept_home(
        tmp_path, monkeypatch):
    server = start_sshd(tmp_path / "sshd")  # its own sshd: this test takes it away for good
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.4"))
    hosts = server.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote", gpus=None)
    req = SweepRequest(config="smoke", grids=["64x1"], queues=[server.spec("cpu") + "?speed=10", "local:cpu"],
                       hosts=str(hosts), name="mv", out=tmp_path / "runs", epochs=8, poll=0.1,
                       stall_timeout=120, retries=1)
    errors: list = []
    thread = threading.Thread(target=lambda: _run(req, errors), daemon=True)
    thread.start()
    remote = tmp_path / "remote" / "mv" / "mv-causal-e64-l1-s42"
    home = tmp_path / "runs" / "mv" / "mv-causal-e64-l1-s42"
    try:
        wait_for(lambda: (home / "checkpoints" / "latest.pt").is_file()
                 and int((home / "checkpoints" / "latest.pt").read_text().split()[1]) >= 2, timeout=120)
        server.stop()  # the host dies with its job
        os.killpg(int((remote / "pid").read_text().split()[0]), signal.SIGKILL)
        subprocess.run(scheduler_for(server.spec("cpu"), server.host_options(tmp_path)).control_argv("exit"),
                       capture_output=True, timeout=30)
        thread.join(300)
    finally:
        server.stop()
    assert not thread.is_alive() and not errors, errors
    trial = json.loads((tmp_path / "runs" / "mv" / "sweep.json").read_text())["trials"][0]
    assert trial["state"] == "completed" and trial["queue"] == "local:cpu" and trial["attempts"] == 2
    assert [h["outcome"] for h in trial["history"]] == ["queue down", "completed"]
    out = (home / "stdout.log").read_text()
    assert "imf: resuming from checkpoints/latest.pt" in out
    resumed_at = int(out.split("resumed at epoch ")[1].split()[0])
    assert resumed_at >= 3 and not (home / "attempts").exists()


def test_a_running_remote_trial_whose_latest_pt_came_home_is_reported_running(tmp_path):
    # its summary.json ("running") is home for a resume elsewhere; its trial.lock is on the host
    from imf.report.collect import read_sweep
    from imf.store.summary import RunSummary
    sweep = tmp_path / "sw"
    (sweep / "t-ssh").mkdir(parents=True)
    (sweep / "t-gone").mkdir()
    RunSummary(id="t-ssh", status="running", epochs_done=2, num_epochs=8).write(sweep / "t-ssh")
    RunSummary(id="t-gone", status="running", epochs_done=2, num_epochs=8).write(sweep / "t-gone")
    trials = [{"id": "t-ssh", "state": "running", "queue": "ssh://h/cpu", "handle": {"host": "me@h"}},
              {"id": "t-gone", "state": "running", "queue": "local:cpu", "handle": {"pid": 1}}]
    (sweep / "sweep.json").write_text(json.dumps({"trials": trials}))
    status = {r.row.id: r.row.status for r in read_sweep(sweep, [])}
    assert status == {"t-ssh": "running", "t-gone": "interrupted"}  # a local one without its lock is gone
