"""Jobs left on a host that went down (orphans) and attempt tokens, against a real sshd."""
from __future__ import annotations

import dataclasses
import json
import os
import shlex
import threading
from pathlib import Path

import pytest
from _sweep_helpers import SSHD, fake_command, wait_for

from imf.errors import BusyError
from imf.scheduler.base import JobRequest, scheduler_for
from imf.sweep.engine import Engine
from imf.sweep.state import Orphan
from imf.sweep.status import render_status
from imf.sweep.launch import SweepRequest, plan_sweep, resume_sweep
from imf.store.scoreboard import ScoreboardStore

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not os.path.exists(SSHD), reason=f"no sshd at {SSHD} (apt-get install -y openssh-server)")]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    from _sweep_helpers import start_sshd
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _trials(sweep_dir: Path) -> list[dict]:
    try:
        return json.loads((sweep_dir / "sweep.json").read_text())["trials"]
    except (OSError, ValueError, KeyError):
        return []


def _job(tmp_path: Path, argv: list[str], token: str, tid: str = "j") -> JobRequest:
    return JobRequest(tid, "s", tmp_path / "home" / tid, argv, "smoke", token=token)


def test_a_probe_ignores_the_pid_and_exit_files_of_another_attempt(sshd, tmp_path):
    sch = scheduler_for(sshd.spec("cpu"), sshd.host_options(tmp_path / "remote"))
    first = sch.start(_job(tmp_path, ["true"], "aaa"))
    assert first.token == "aaa"
    wait_for(lambda: sch.poll(first).state == "exited")
    assert sch.poll(dataclasses.replace(first, token="bbb")).state == "absent"  # not that attempt's folder
    second = sch.start(_job(tmp_path, ["sleep", "60"], "ccc"))
    try:
        # an exit file the first attempt's wrapper writes late is not the second attempt's end
        (Path(second.dir) / "exit_code").write_text("0 aaa\n")
        status = sch.poll(second)
        assert status.state == "running" and status.exit_code is None
    finally:
        sch.stop(second)
    assert sch.poll(second).state == "lost"


def test_the_files_of_a_live_job_are_never_moved(sshd, tmp_path):
    sch = scheduler_for(sshd.spec("cpu"), sshd.host_options(tmp_path / "remote"))
    live = sch.start(_job(tmp_path, ["sleep", "60"], "one"))
    try:
        with pytest.raises(BusyError, match=f"pid {live.pid}") as caught:
            sch.start(_job(tmp_path, ["true"], "two"))
        assert caught.value.holder.token == "one"
        assert caught.value.holder.pid == live.pid
        assert not (Path(live.dir) / "attempts").exists()
        assert sch.poll(live).state == "running"
    finally:
        sch.stop(live)
    sch.start(_job(tmp_path, ["true"], "three"))  # once it ended, a new attempt moves it aside
    assert (Path(live.dir) / "attempts" / "1" / "pid").is_file()


def _orphan_sweep(sshd, tmp_path, monkeypatch, trial_args: tuple[str, ...]):
    """A one-trial sweep on [ssh, local:cpu] whose ssh queue is down with the trial's first
    attempt still on it (an orphan), the trial waiting on local:cpu."""
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command(*trial_args))
    hosts = sshd.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote")
    sdir, state, _ = plan_sweep(SweepRequest(
        config="smoke", grids=["64x1"], queues=[sshd.spec("cpu"), "local:cpu"], hosts=str(hosts),
        name="o", out=tmp_path / "runs", epochs=3, poll=0.1, stall_timeout=30))
    trial, ssh_queue = state.trials[0], state.queues[0]
    trial.queue, ssh_queue.state, ssh_queue.reason = ssh_queue.name, "down", "gone"
    engine = Engine(sdir, state, lambda s: None)
    job = engine.job_request(trial)
    job.token = "attempt1"
    handle = engine.scheduler(ssh_queue.name).start(job)
    trial.attempts, trial.queue = 1, "local:cpu"
    trial.orphans = [Orphan(ssh_queue.name, handle, 1)]
    trial.history = [{"attempt": 1, "queue": ssh_queue.name, "pid": handle.pid,
                      "outcome": "queue down", "exit_code": None, "reason": "gone"}]
    sdir.save(state)
    return sdir, engine, handle


def test_a_live_orphan_is_killed_when_its_host_answers_and_the_trial_runs_once(
        sshd, tmp_path, monkeypatch):
    sdir, engine, handle = _orphan_sweep(sshd, tmp_path, monkeypatch, ("--epoch-s", "20"))
    remote = Path(handle.dir)
    pid = int(wait_for(lambda: (remote / "fake.pid").is_file() and (remote / "fake.pid").read_text()))
    assert f"orphan of {engine.state.trials[0].id} on " in render_status(sdir)
    engine.state.trial_command = shlex.split(fake_command("--epoch-s", "0.05"))  # the rerun
    engine.run()
    assert not _alive(pid) and not _alive(handle.pid)
    data = json.loads(sdir.state_file.read_text())
    trial = data["trials"][0]
    assert trial["state"] == "completed" and trial["orphans"] == [] and trial["attempts"] == 2
    assert "killed the orphan" in (sdir.path / "sweep.log").read_text()
    assert [r["id"] for r in ScoreboardStore(sdir.path).read()] == [trial["id"]]


def test_a_finished_orphan_is_the_result_of_a_trial_that_did_not_run_elsewhere(
        sshd, tmp_path, monkeypatch):
    sdir, engine, handle = _orphan_sweep(sshd, tmp_path, monkeypatch, ("--epoch-s", "0.01"))
    sch = engine.scheduler(engine.state.queues[0].name)
    wait_for(lambda: sch.poll(handle).state == "exited")
    engine.run()
    data = json.loads(sdir.state_file.read_text())
    trial = data["trials"][0]
    assert trial["state"] == "completed" and trial["attempts"] == 1 and trial["orphans"] == []
    log = (sdir.path / "sweep.log").read_text()
    assert " start " not in log and "result of its orphan" in log
    home = sdir.trial_dir(trial["id"])
    assert json.loads((home / "summary.json").read_text())["status"] == "completed"
    assert (home / "checkpoints" / "best.pt").is_file()


def test_a_finished_orphan_of_a_trial_completed_elsewhere_is_ignored_on_resume(
        sshd, tmp_path, monkeypatch):
    sdir, engine, handle = _orphan_sweep(sshd, tmp_path, monkeypatch, ("--epoch-s", "0.01"))
    orphans = engine.state.trials[0].orphans
    engine.state.trials[0].orphans = []  # the trial completes on local:cpu first
    engine.run()
    attempts = engine.state.trials[0].attempts
    sch = engine.scheduler(engine.state.queues[0].name)
    wait_for(lambda: sch.poll(handle).state == "exited")
    state = sdir.load()
    state.trials[0].orphans = orphans
    sdir.save(state)
    home = sdir.trial_dir(state.trials[0].id)
    (home / "summary.json").write_text((home / "summary.json").read_text().replace('"fake"', '"local"'))
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    board = (sdir.path / "scoreboard.json").read_bytes()
    resume_sweep(sdir.path, lambda s: None)
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before
    assert (sdir.path / "scoreboard.json").read_bytes() == board
    data = json.loads(sdir.state_file.read_text())
    assert data["trials"][0]["orphans"] == [] and data["trials"][0]["attempts"] == attempts
    assert "is ignored" in (sdir.path / "sweep.log").read_text()


def test_a_host_down_mid_trial_then_resume_runs_every_trial_once_and_stops_the_orphan(tmp_path):
    """The fault drill of issue 10: sshd and its sessions killed mid-trial, the controller
    SIGKILLed after "is down", sshd back, --resume."""
    import signal
    from collections import Counter

    from _sweep_helpers import controller_story, start_sshd, sweep_controller
    server = start_sshd(tmp_path / "sshd")
    ledger, gate = tmp_path / "ledger.txt", tmp_path / "gate"
    hosts = server.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote")
    sweep_dir, remote = tmp_path / "runs" / "s", tmp_path / "remote" / "s"
    # Every trial is held before its first epoch until the gate opens, so the remote one is alive
    # when its host goes down however slow this machine is; the gate opens once the resume has
    # killed the orphan, so the orphan can never finish.
    def open_gate_after_the_kill() -> None:
        log = sweep_dir / "sweep.log"
        wait_for(lambda: "killed the orphan" in log.read_text(), timeout=600)
        gate.touch()
    opener = threading.Thread(target=open_gate_after_the_kill, daemon=True)
    try:
        controller = sweep_controller(tmp_path / "runs", "s", ["--epoch-s", "0.3", "--ledger", str(ledger),
                                                               "--gate", str(gate)],
                                      "--grid", "64x1,2", "--queue", server.spec("cpu"), "--queue",
                                      "local:cpu", "--hosts", str(hosts), "--epochs", "25", "--poll", "0.2",
                                      "--stall-timeout", "300")
        story = lambda: controller_story(controller, sweep_dir)  # noqa: E731
        pid_file = wait_for(lambda: next((p for p in remote.glob("*/fake.pid") if p.read_text()), None),
                            timeout=120, story=story)
        orphan = int(pid_file.read_text())
        server.kill_sessions()
        server.stop()
        # "is down" is logged, and the orphan saved in sweep.json: then the controller dies
        wait_for(lambda: any(t.get("orphans") for t in _trials(sweep_dir)), timeout=600, story=story)
        controller.send_signal(signal.SIGKILL)
        controller.wait()
        assert _alive(orphan)  # the job on the host that went down runs on
        server.restart()
        opener.start()
        resume_sweep(sweep_dir, lambda s: None)
    finally:
        gate.touch()
        server.stop()
    assert not _alive(orphan)
    data = json.loads((sweep_dir / "sweep.json").read_text())
    assert Counter(line.split()[0] for line in ledger.read_text().splitlines()) == \
        {t["id"]: 1 for t in data["trials"]}  # every trial ran to its end exactly once
    assert all(t["state"] == "completed" and t["orphans"] == [] for t in data["trials"])
    for t in data["trials"]:
        assert json.loads((sweep_dir / t["id"] / "summary.json").read_text())["epochs_done"] == 25
    assert sorted(r["id"] for r in ScoreboardStore(sweep_dir).read()) == sorted(t["id"] for t in data["trials"])
    assert "killed the orphan" in (sweep_dir / "sweep.log").read_text()


class _Polls:
    """A scheduler whose polls answer from a script; counts stops."""

    def __init__(self, *states):
        self.states, self.stops = list(states), 0

    def poll(self, handle, offset=0):
        return self.states.pop(0)

    def stop(self, handle):
        self.stops += 1


def _resolve(polls):
    from imf.scheduler.base import Handle
    from imf.sweep.recovery import Recovery
    from imf.sweep.stall import StallWatch
    from imf.sweep.state import Orphan, TrialState

    class Context:  # the part of the engine's shared context that resolving reads
        def __init__(self):
            self.stalls, self.lines = StallWatch(), []

        def scheduler(self, name):
            return polls

        def log(self, message):
            self.lines.append(message)

    trial = TrialState(id="t", overrides=[], seed=42, epochs=1, params={}, cost=1.0, queue="local:cpu")
    orphan = Orphan("ssh://h/cpu", Handle(pid=5, token="a"), 1)
    context = Context()
    Recovery(context, None, None, None).resolve(trial, orphan)
    return trial, context.lines


def test_an_orphan_that_ends_on_its_own_as_it_is_stopped_gives_its_result():
    # the ssh-down drill: the orphan finished between the poll that saw it running and the stop
    from imf.scheduler.base import JobStatus
    polls = _Polls(JobStatus("running", pid=5), JobStatus("exited", exit_code=0, pid=5))
    trial, lines = _resolve(polls)
    assert polls.stops == 1 and trial.state == "running" and trial.queue == "ssh://h/cpu"
    assert "takes the result of its orphan" in lines[-1] and not trial.history


def test_an_orphan_stopped_while_running_is_killed_and_noted():
    from imf.scheduler.base import JobStatus
    polls = _Polls(JobStatus("running", pid=5), JobStatus("lost", pid=5))
    trial, lines = _resolve(polls)
    assert polls.stops == 1 and trial.state == "pending"
    assert lines[-1].startswith("killed the orphan of t") and trial.history[-1]["outcome"] == "orphan killed"
