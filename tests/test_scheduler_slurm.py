"""The slurm scheduler against a real private single-node Slurm cluster (tests/slurm_cluster.py).

Slow (a time-limit test alone takes two minutes: Slurm counts limits in whole minutes and
checks them every 30 s), but mostly waiting: under README's `pytest -n 4` this module starts
first on a worker of its own while the others run the rest; ``pytest -m slurm`` runs it alone.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _sweep_helpers import fake_command, sweep_controller, wait_for
from slurm_cluster import SlurmCluster, missing_binaries

from imf.scheduler.base import JobRequest
from imf.scheduler.slurm import SlurmScheduler
from imf.sweep.launch import SweepRequest, resume_sweep, start_sweep
from imf.store.layout import EXIT_CODE
from imf.store.scoreboard import ScoreboardStore

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    missing = missing_binaries()
    if missing:
        pytest.skip(f"no {', '.join(missing)} on this host "
                    f"(apt-get install -y slurmctld slurmd slurm-client munge)")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    old = os.environ.get("SLURM_CONF")
    try:
        cluster.start()
        os.environ["SLURM_CONF"] = str(cluster.conf)
        yield cluster
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        cluster.stop()


def squeue(*columns: str) -> list[list[str]]:
    out = subprocess.run(["squeue", "-h", "-o", "|".join(columns or ("%i", "%T"))],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def sweep_json(sweep_dir: Path) -> dict:
    return json.loads((sweep_dir / "sweep.json").read_text())


def running_jobs(sweep_dir: Path, n: int = 1) -> list[dict]:
    """Wait until ``n`` trials run as Slurm jobs (an epoch logged); their states from sweep.json."""
    def found():
        try:
            trials = sweep_json(sweep_dir)["trials"]
        except (OSError, ValueError):
            return None
        live = [t for t in trials if t["state"] == "running" and t["epoch"] >= 1
                and (t["handle"] or {}).get("job_id")]
        return live if len(live) >= n else None
    return wait_for(found, timeout=240, interval=0.2)


class MaxJobs(threading.Thread):
    """The most jobs Slurm held (pending or running) at once while the test ran."""

    def __init__(self):
        super().__init__(daemon=True)
        self.most, self.done = 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                self.most = max(self.most, len([j for j in squeue() if j[1] in ("PENDING", "RUNNING")]))
            except subprocess.SubprocessError:
                pass
            time.sleep(0.3)


def test_a_four_trial_grid_on_two_slurm_slots_completes_each_trial_once(slurm, tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.5", "--ledger", str(ledger)))
    req = SweepRequest(config="smoke", grids=["64,128x1,2"], queues=["slurm://debug?slots=2"],
                       name="grid", out=tmp_path / "runs", epochs=3, poll=0.5, stall_timeout=300)
    watcher = MaxJobs()
    watcher.start()
    lines: list[str] = []
    try:
        start_sweep(req, lines.append)
    finally:
        watcher.done.set()
    sweep_dir = tmp_path / "runs" / "grid"
    data = sweep_json(sweep_dir)
    assert data["status"] == "finished"
    assert [q["name"] for q in data["queues"]] == ["slurm://debug?slots=2", "slurm://debug?slots=2#2"]
    assert all(t["state"] == "completed" and t["attempts"] == 1 for t in data["trials"]), data["trials"]
    assert len({t["handle"]["job_id"] for t in data["trials"]}) == 4
    assert sorted(line.split()[0] for line in ledger.read_text().splitlines()) == \
        sorted(t["id"] for t in data["trials"])  # each trial ran exactly once
    assert 1 <= watcher.most <= 2  # never more jobs in the partition than slots
    for t in data["trials"]:
        run = sweep_dir / t["id"]
        assert (run / "summary.json").is_file() and "epoch 2 done" in (run / "stdout.log").read_text()
        assert list((run / "slurm").glob(f"{t['handle']['job_id']}_*"))  # submitit's own files
    records = ScoreboardStore(sweep_dir).read()
    assert sorted(r["id"] for r in records) == sorted(t["id"] for t in data["trials"])
    assert (sweep_dir / "report.md").is_file() and any("rank" in line for line in lines)
    assert "job " in (sweep_dir / "sweep.log").read_text()


def run_in_thread(req: SweepRequest) -> tuple[threading.Thread, list]:
    errors: list = []

    def target():
        try:
            start_sweep(req, lambda s: None)
        except BaseException as exc:  # handed to the test
            errors.append(exc)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, errors


def test_a_job_cancelled_with_scancel_is_retried(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "1"))
    req = SweepRequest(config="smoke", grids=["64x1"], queues=["slurm://debug"], name="sc",
                       out=tmp_path, epochs=6, poll=0.5, stall_timeout=300, retries=1)
    thread, errors = run_in_thread(req)
    first = running_jobs(tmp_path / "sc")[0]
    subprocess.run(["scancel", first["handle"]["job_id"]], check=True, timeout=60)
    thread.join(600)
    assert not thread.is_alive() and not errors, errors
    trial = sweep_json(tmp_path / "sc")["trials"][0]
    assert trial["state"] == "completed" and trial["attempts"] == 2
    assert trial["history"][0]["outcome"] == "failed"
    assert f"Slurm ended job {first['handle']['job_id']} with CANCELLED" in trial["history"][0]["reason"]
    assert trial["handle"]["job_id"] != first["handle"]["job_id"]
    assert (tmp_path / "sc" / trial["id"] / "attempts" / "1" / "stdout.log").is_file()  # kept aside


def requeue_and_release(job_id: str) -> None:
    """``scontrol requeue``, then let the job start again now instead of after the begin time
    Slurm holds it back for, once its node has put the last run away and a whole second has
    passed: a restart launched while slurmd still holds the revoked credential (issued in the
    same second) is killed as non-startable and ends FAILED, a real failure the engine records."""
    subprocess.run(["scontrol", "requeue", job_id], check=True, timeout=60)
    requeued_at = time.time()
    wait_for(lambda: [r for r in squeue("%i", "%T") if r == [job_id, "PENDING"]], timeout=120)
    wait_for(lambda: time.time() > requeued_at + 2 and subprocess.run(
        ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=60).stdout.split() == ["idle"],
        timeout=120)
    subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], check=True, timeout=60)


def test_a_requeued_job_read_at_random_moments_is_never_taken_for_ended(slurm, tmp_path):
    """Drill: a running job is requeued at a random moment and polled at random moments until it
    runs again; no poll reads it as ended (exited, lost) and the restart is reported. (A restart
    released in the requeue's second is killed by Slurm and ends FAILED, a real failure: 2 of 25
    such releases in a probe; ``requeue_and_release`` waits that out.)"""
    queue, rng = SlurmScheduler("slurm://debug"), random.Random(7)
    for rep in range(4):
        run = tmp_path / f"r{rep}"
        handle = queue.start(JobRequest(trial_id=f"t{rep}", sweep="drill", run_dir=run,
                                        argv=["sleep", "600"], config="smoke", token=f"tok{rep}"))
        try:
            wait_for(lambda: (run / "pid").is_file() and queue.poll(handle).state == "running", timeout=120)
            time.sleep(rng.uniform(0, 1))
            requeue_and_release(handle.extra["job_id"])
            seen, deadline = [], time.monotonic() + 240
            while not (seen and seen[-1] == ("running", 1)):
                assert time.monotonic() < deadline, f"rep {rep}: the restart never ran: {seen[-5:]}"
                status = queue.poll(handle)
                seen.append((status.state, status.restarts))
                assert status.state in ("queued", "running"), (rep, seen, status.reason)
                time.sleep(rng.uniform(0, 0.5))
        finally:
            queue.stop(handle)


def test_a_requeued_job_whose_first_run_wrote_its_exit_file_is_read_as_running_again(slurm, tmp_path):
    """Drill: Slurm signals a job's processes children first (proctrack/linuxproc), so the
    trainer can die of the requeue's SIGTERM before its wrapper is signalled, and the wrapper
    then writes "143 TOKEN". The same job runs again with the same token: that file is the
    first run's, and no poll of the restart may read the trial as ended by it (CI once
    recorded the requeued trial as failed)."""
    queue = SlurmScheduler("slurm://debug")
    run = tmp_path / "r"
    handle = queue.start(JobRequest(trial_id="t", sweep="drill", run_dir=run, argv=["sleep", "600"],
                                    config="smoke", token="tok"))
    try:
        wait_for(lambda: (run / "pid").is_file() and queue.poll(handle).state == "running", timeout=120)
        first_pid = (run / "pid").read_text()
        (run / EXIT_CODE).write_text("143 tok\n")  # what the first run's wrapper wrote in that race
        requeue_and_release(handle.extra["job_id"])
        seen, deadline = [], time.monotonic() + 240
        while not (seen and seen[-1][0] == "running" and (run / "pid").read_text() != first_pid):
            assert time.monotonic() < deadline, f"the restart never ran: {seen[-5:]}"
            status = queue.poll(handle)
            seen.append((status.state, status.exit_code))
            assert status.state in ("queued", "running"), seen
            time.sleep(0.2)
        assert queue.poll(handle).state == "running"
        assert not (run / EXIT_CODE).exists()  # the restart put the first run's end away
    finally:
        queue.stop(handle)


def test_a_job_requeued_by_slurm_resumes_in_the_same_job(slurm, tmp_path, monkeypatch):
    # scontrol requeue is what a preemption with PreemptMode=REQUEUE does to a job. A busy
    # controller once never saw the job waiting: the job's restart count tells it then
    # (tests/test_slurm_requeue_seen.py).
    poll, epoch_s, epochs = 0.5, 1, 8
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", str(epoch_s)))
    req = SweepRequest(config="smoke", grids=["64x1"], queues=["slurm://debug"], name="rq",
                       out=tmp_path, epochs=epochs, poll=poll, stall_timeout=300, retries=0)
    thread, errors = run_in_thread(req)
    job_id = running_jobs(tmp_path / "rq")[0]["handle"]["job_id"]
    wait_for(lambda: (tmp_path / "rq").glob("*/checkpoints/latest.pt"), timeout=120)
    requeue_and_release(job_id)
    thread.join(600)
    assert not thread.is_alive() and not errors, errors
    trial = sweep_json(tmp_path / "rq")["trials"][0]
    # the requeue is an attempt of its own (issue #45): the same job and token run again, resumed
    assert trial["state"] == "completed" and trial["attempts"] == 2 and trial["handle"]["job_id"] == job_id, \
        (trial["history"], (tmp_path / "rq" / "sweep.log").read_text()[-2000:])
    assert [h["outcome"] for h in trial["history"]] == ["preempted", "completed"]
    assert f"job {job_id} was requeued" in trial["history"][0]["reason"]
    run = tmp_path / "rq" / trial["id"]
    out = (run / "stdout.log").read_text()
    assert "Slurm requeued this job; resuming from checkpoints/latest.pt" in out and "resumed at epoch" in out
    assert not (run / "attempts").exists()  # resumed in place, not started over
    logged = [json.loads(line)["epoch"] for line in (run / "logs.json.txt").read_text().splitlines()]
    assert logged == sorted(logged) and logged[-1] == epochs - 1 and trial["epoch"] == len(logged)  # read again from 0
    assert f"preempted {trial['id']}" in (tmp_path / "rq" / "sweep.log").read_text()


def test_a_stalled_slurm_job_is_cancelled_and_retried(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.2", "--hang-on", "e64"))
    req = SweepRequest(config="smoke", grids=["64x1"], queues=["slurm://debug"], name="st",
                       out=tmp_path, epochs=3, poll=0.5, stall_timeout=8, retries=1)
    start_sweep(req, lambda s: None)
    trial = sweep_json(tmp_path / "st")["trials"][0]
    assert trial["state"] == "completed" and trial["attempts"] == 2
    first = trial["history"][0]
    assert first["outcome"] == "stalled"
    assert not [row for row in squeue("%i", "%T") if row[1] in ("PENDING", "RUNNING")]


def test_a_job_past_its_time_limit_is_resumed_from_its_checkpoint(slurm, tmp_path, monkeypatch):
    # Slurm counts limits in whole minutes (00:00:05 is one minute) and checks them every 30 s:
    # a 100 s trial is stopped after 60-90 s and its retry finishes the remaining epochs.
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "4"))
    req = SweepRequest(config="smoke", grids=["64x1"], queues=["slurm://debug?time=00:00:05"],
                       name="to", out=tmp_path, epochs=25, poll=1, stall_timeout=300, retries=1)
    start_sweep(req, lambda s: None)
    sweep_dir = tmp_path / "to"
    trial = sweep_json(sweep_dir)["trials"][0]
    assert trial["state"] == "completed" and trial["attempts"] == 2, trial
    assert trial["history"][0]["outcome"] == "timeout" and "TIMEOUT" in trial["history"][0]["reason"]
    run = sweep_dir / trial["id"]
    assert not (run / "attempts").exists()  # resumed in place, not started over
    out = (run / "stdout.log").read_text()
    assert "resuming from checkpoints/latest.pt" in out and "resumed at epoch" in out
    epochs = [json.loads(line)["epoch"] for line in (run / "logs.json.txt").read_text().splitlines()]
    assert epochs[-1] == 24 and 10 < epochs.index(24) < 24 + 1 and epochs[0] == 0
    log = (sweep_dir / "sweep.log").read_text()
    assert "a retry resumes it from its latest checkpoint" in log
    assert "resuming from its latest checkpoint" in log


def test_a_killed_controller_resumed_reattaches_without_resubmitting(slurm, tmp_path):
    ledger = tmp_path / "ledger.txt"
    controller = sweep_controller(tmp_path, "k", ["--epoch-s", "1", "--ledger", str(ledger)], "--grid",
                                  "64x1,2,3", "--queue", "slurm://debug?slots=2", "--epochs", "6",
                                  "--poll", "0.5", "--stall-timeout", "300")
    sweep_dir = tmp_path / "k"
    try:
        live = running_jobs(sweep_dir, n=2)
    finally:
        controller.send_signal(signal.SIGKILL)
        controller.wait()
    before = {t["id"]: t["handle"]["job_id"] for t in live}
    queued = {row[0] for row in squeue("%i", "%T")}
    assert set(before.values()) <= queued  # the jobs outlive their controller
    resume_sweep(sweep_dir, lambda s: None)
    data = sweep_json(sweep_dir)
    assert data["status"] == "finished"
    for t in data["trials"]:
        assert t["state"] == "completed" and t["attempts"] == 1, t
        if t["id"] in before:
            assert t["handle"]["job_id"] == before[t["id"]]
    assert sorted(line.split()[0] for line in ledger.read_text().splitlines()) == \
        sorted(t["id"] for t in data["trials"])
    log = (sweep_dir / "sweep.log").read_text()
    assert all(f"re-attached {tid} on" in log for tid in before)


def test_cancel_stops_the_controller_and_leaves_no_job_in_squeue(slurm, tmp_path):
    controller = sweep_controller(tmp_path, "c", ["--epoch-s", "2"], "--grid", "64x1,2,3", "--queue",
                                  "slurm://debug?slots=3", "--epochs", "100", "--poll", "0.5",
                                  "--stall-timeout", "300")
    sweep_dir = tmp_path / "c"
    try:
        live = running_jobs(sweep_dir, n=1)
        proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "--cancel", str(sweep_dir)],
                              capture_output=True, text=True, timeout=600)
        controller.wait(300)  # the controller stops (TimeoutExpired if it does not)
    finally:
        if controller.poll() is None:
            controller.kill()
    assert proc.returncode == 0, proc.stderr
    assert "imf sweep --resume" in proc.stdout
    ours = {t["handle"]["job_id"] for t in live}
    assert not [row for row in squeue("%i", "%T") if row[0] in ours or row[1] in ("PENDING", "RUNNING")]
    data = sweep_json(sweep_dir)
    assert data["status"] == "interrupted"
    assert all(t["state"] == "pending" for t in data["trials"])
    assert sum(t["history"][-1]["outcome"] == "cancelled" for t in data["trials"] if t["history"]) >= 1


def test_a_bad_partition_is_one_line_before_anything_is_submitted(slurm, tmp_path):
    before = squeue()
    proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "smoke", "--queue", "slurm://nope?slots=2",
                           "--name", "bad", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Slurm has no partition 'nope'; partitions: debug" in lines[0], proc.stderr
    assert not (tmp_path / "bad").exists() and squeue() == before


def test_a_real_smoke_trial_runs_as_a_slurm_job(slurm, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IMF_TRIAL_COMMAND"}
    cmd = [sys.executable, "-m", "imf", "sweep", "smoke", "--grid", "32x1", "--queue", "slurm://debug",
           "--name", "real", "--out", str(tmp_path), "--epochs", "1", "--poll", "1",
           "--stall-timeout", "900"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sweep_dir = tmp_path / "real"
    trial = sweep_json(sweep_dir)["trials"][0]
    assert trial["state"] == "completed" and trial["handle"]["job_id"]
    run = sweep_dir / trial["id"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["id"] == trial["id"] and summary["epochs_done"] == 1
    assert (run / summary["checkpoints"]["best"]).is_file()
    assert f"trial {trial['id']}: completed" in (run / "stdout.log").read_text()
    assert "rank" in proc.stdout


def test_a_trainer_programs_two_trial_sweep_runs_as_slurm_jobs_onto_the_scoreboard(slurm, tmp_path, monkeypatch):
    """A command trainer (docs/trainers.md) on a Slurm queue: each trial of the example program
    is a job of its own, and the controller records each by the metric's goal."""
    monkeypatch.delenv("IMF_TRIAL_COMMAND", raising=False)
    toy = Path(__file__).resolve().parents[1] / "examples" / "trainers" / "toy.yaml"
    req = SweepRequest(config=str(toy), grids=["optim.lr=0.02,0.1"], overrides=["optim.steps=100"],
                       queues=["slurm://debug?slots=2"], name="toy", out=tmp_path / "runs", poll=0.5,
                       stall_timeout=300)
    start_sweep(req, lambda s: None)
    sweep_dir = tmp_path / "runs" / "toy"
    data = sweep_json(sweep_dir)
    assert all(t["state"] == "completed" and t["attempts"] == 1 for t in data["trials"]), data["trials"]
    assert len({t["handle"]["job_id"] for t in data["trials"]}) == 2
    records = {r["id"]: r for r in ScoreboardStore(sweep_dir).read()}
    assert sorted(records) == ["toy-lr0.02-s0", "toy-lr0.1-s0"]
    for tid, record in records.items():
        summary = json.loads((sweep_dir / tid / "summary.json").read_text())
        assert record["score"] == summary["best_score"] == -summary["metric"]["value"] < 0  # goal minimize
        assert (sweep_dir / tid / "best.pt").is_file()
    board = json.loads((sweep_dir / "scoreboard.json").read_text())
    assert board["best"]["value"] == max(r["score"] for r in records.values())
