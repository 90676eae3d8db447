"""The ssh scheduler against a real sshd on 127.0.0.1 (started here with generated keys)."""
from __future__ import annotations

import json
from dataclasses import replace
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from _sweep_helpers import SSHD, fake_command, free_port, start_sshd, sweep_controller, wait_for

from imf.errors import QueueError, SweepError
from imf.scheduler.base import JobRequest, scheduler_for
from imf.sweep.queues import load_hosts
from imf.sweep.launch import SweepRequest, start_sweep
from imf.store.scoreboard import ScoreboardStore

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.exists(SSHD), reason=f"no sshd at {SSHD} "
                                "(apt-get install -y openssh-server openssh-client)")]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def test_a_sweep_with_a_local_and_an_ssh_slot_runs_to_the_end(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.1"))
    remote = tmp_path / "remote"
    hosts = sshd.hosts_file(tmp_path / "hosts.yaml", remote, [sshd.spec("gpu:1"), "local:cpu"])
    config = tmp_path / "mine.yaml"  # a config file (with a base: chain) travels to the host
    config.write_text("base: smoke\ntraining:\n  lr: 0.002\n")
    req = SweepRequest(config=str(config), grids=["64,128x1,2"], hosts=str(hosts), name="mix",
                       out=tmp_path / "runs", epochs=3, poll=0.1, stall_timeout=30,
                       overrides=["logging.project=it's a \"quoted\" $HOME `x`"])
    start_sweep(req, lambda s: None)
    sweep_dir = tmp_path / "runs" / "mix"
    data = json.loads((sweep_dir / "sweep.json").read_text())
    assert data["status"] == "finished"
    assert all(t["state"] == "completed" and t["attempts"] == 1 for t in data["trials"])
    on_ssh = [t for t in data["trials"] if t["queue"].startswith("ssh://")]
    assert on_ssh and len(on_ssh) < 4
    for t in on_ssh:
        home = sweep_dir / t["id"]
        assert (remote / "mix" / t["id"] / "summary.json").is_file()  # ran in the remote folder
        for name in ("summary.json", "logs.json.txt", "stdout.log", "checkpoints/best.pt", "exit_code"):
            assert (home / name).is_file(), name  # and came home
        config = json.loads((home / "config.yaml").read_text())
        assert "logging.project=it's a \"quoted\" $HOME `x`" in config["overrides"]
        assert "training.device=cuda" in config["overrides"]  # the GPU slot's trial asks for it
        assert config["config"] == str(remote / "mix" / "sweep_config.yaml")
        assert "lr: 0.002" in Path(config["config"]).read_text()
        assert t["handle"]["host"].endswith("@127.0.0.1")
    records = {r["id"]: r for r in ScoreboardStore(sweep_dir).read()}
    assert sorted(records) == sorted(t["id"] for t in data["trials"])
    for t in on_ssh:  # the controller recorded the remote trials with their home checkpoint
        assert records[t["id"]]["checkpoint"] == str((sweep_dir / t["id"] / "checkpoints/best.pt").resolve())
    assert (sweep_dir / "report.md").is_file()


def test_an_unreachable_host_is_down_and_its_trials_move_to_the_live_queue(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02"))
    dead = f"ssh://{sshd.user}@127.0.0.1:{free_port()}/gpu:0"
    hosts = sshd.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote")
    req = SweepRequest(config="smoke", grids=["64x1,2,3,4"], queues=[dead, "local:cpu"],
                       hosts=str(hosts), name="down", out=tmp_path, epochs=2, poll=0.1)
    with pytest.raises(SweepError, match=r"1 of 2 queues passed their check, 2 needed .*unreachable"):
        start_sweep(replace(req, name="refused"), lambda s: None)  # by default every queue must pass
    start_sweep(replace(req, min_queues=1), lambda s: None)
    data = json.loads((tmp_path / "down" / "sweep.json").read_text())
    assert data["queues"][0]["state"] == "down" and "unreachable" in data["queues"][0]["reason"]
    assert all(t["state"] == "completed" and t["queue"] == "local:cpu" for t in data["trials"])
    assert len(ScoreboardStore(tmp_path / "down").read()) == 4
    assert "is down" in (tmp_path / "down" / "sweep.log").read_text()


def test_a_gpu_queue_on_a_host_without_cuda_is_down_and_its_trials_move(sshd, tmp_path, monkeypatch):
    import torch
    if torch.cuda.is_available():
        pytest.skip("the host (this machine) has CUDA")
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02"))
    hosts = sshd.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote", gpus=None)  # its real probe
    req = SweepRequest(config="smoke", grids=["64x1,2"], queues=[sshd.spec("gpu:1"), "local:cpu"],
                       hosts=str(hosts), name="nogpu", out=tmp_path, epochs=2, poll=0.1, min_queues=1)
    start_sweep(req, lambda s: None)
    data = json.loads((tmp_path / "nogpu" / "sweep.json").read_text())
    queue = data["queues"][0]
    assert queue["state"] == "down"
    assert queue["reason"].startswith(f"no CUDA device 1 on 127.0.0.1:{sshd.port}: torch ")
    assert all(t["state"] == "completed" and t["queue"] == "local:cpu" and t["attempts"] == 1
               for t in data["trials"])
    assert not (tmp_path / "remote" / "nogpu").exists()  # nothing ran on the host


def test_remote_jobs_are_detached_reattached_and_stopped_as_a_tree(sshd, tmp_path):
    options = sshd.host_options(tmp_path / "remote")
    job = JobRequest("hang", "s", tmp_path / "home" / "hang",
              ["sh", "-c", "sleep 300 & echo '{\"epoch\": 0}' > logs.json.txt; wait"], "smoke")
    first = scheduler_for(sshd.spec("cpu"), options)
    handle = first.start(job)
    first.close()
    again = scheduler_for(sshd.spec("cpu"), options)  # a new controller: only the saved handle
    status = again.poll(handle, 0)
    assert status.state == "running" and status.pid == handle.pid
    status = wait_for(lambda: (s := again.poll(handle)).log_size and s)
    assert json.loads(status.new_log)["epoch"] == 0
    started = time.monotonic()
    again.stop(handle)
    assert time.monotonic() - started < 10
    assert again.poll(handle).state == "lost"
    # the sleep in the background dies with its process group (moments after the KILL)
    wait_for(lambda: not _live_in_group(handle.pid), timeout=5)


def _live_in_group(pgid: int) -> list[str]:
    members = os.popen(f"ps -o stat= -g {pgid}").read().split()
    return [s for s in members if not s.startswith("Z")]


def test_unknown_remote_python_and_refused_host_keys_are_queue_errors(sshd, tmp_path):
    options = {**sshd.host_options(tmp_path), "python": "/no/such/python"}
    with pytest.raises(QueueError, match="python '/no/such/python' not found"):
        scheduler_for(sshd.spec(), options).check()
    strict = sshd.host_options(tmp_path)
    strict["ssh_options"] = [o.replace(str(sshd.known_hosts), "/dev/null") for o in strict["ssh_options"]]
    strict["ssh_options"] += ["-o", "ControlPath=none"]  # not through the master already open
    with pytest.raises(QueueError, match="unreachable"):  # host key checking stays on
        scheduler_for(sshd.spec(), strict).check()


def test_ssh_command_line_keeps_user_options_first_and_shares_one_connection(tmp_path):
    hosts = tmp_path / "h.yaml"
    hosts.write_text("hosts:\n  box: {ssh_options: '-o ConnectTimeout=3 -J jump', port: 2222}\n")
    options = load_hosts(hosts)["hosts"]["box"]
    argv = scheduler_for("ssh://me@box/gpu:0", options).ssh_argv()
    assert argv[:5] == ["ssh", "-o", "ConnectTimeout=3", "-J", "jump"]
    for opt in ("BatchMode=yes", "ControlMaster=auto", "ServerAliveInterval=15", "ConnectTimeout=10"):
        assert opt in argv
    assert any(a.startswith("ControlPath=") for a in argv)
    assert argv[-4:] == ["-p", "2222", "--", "me@box"]
    assert "StrictHostKeyChecking=no" not in " ".join(argv)


def test_a_host_lost_mid_sweep_goes_down_and_its_trials_finish_locally(tmp_path, monkeypatch):
    server = start_sshd(tmp_path / "sshd")  # its own sshd: this test takes it away
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.3"))
    hosts = server.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote")
    req = SweepRequest(config="smoke", grids=["64x1,2,3"], queues=[server.spec(), "local:cpu"],
                       hosts=str(hosts), name="lost", out=tmp_path / "runs", epochs=4, poll=0.1)
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _sweep(req, errors))
    thread.start()
    state_file = tmp_path / "runs" / "lost" / "sweep.json"
    try:
        wait_for(lambda: state_file.is_file() and any(
            t["state"] == "running" and t["queue"].startswith("ssh://")
            for t in json.loads(state_file.read_text())["trials"]), timeout=60)
        server.stop()
        sch = scheduler_for(server.spec(), server.host_options(tmp_path))
        subprocess.run(sch.control_argv("exit"), capture_output=True, timeout=30)
        thread.join(120)
    finally:
        server.stop()
    assert not errors and not thread.is_alive()
    data = json.loads(state_file.read_text())
    assert data["status"] == "finished" and data["queues"][0]["state"] == "down"
    assert all(t["state"] == "completed" and t["queue"] == "local:cpu" for t in data["trials"])
    assert any(h["outcome"] == "queue down" for t in data["trials"] for h in t["history"])
    assert len(ScoreboardStore(tmp_path / "runs" / "lost").read()) == 3


def _sweep(req: SweepRequest, errors: list[BaseException]) -> None:
    try:
        start_sweep(req, lambda s: None)
    except BaseException as exc:  # surfaced by the test thread
        errors.append(exc)


@pytest.mark.parametrize("spec, options", [
    ("ssh://-oProxyCommand=sh/cpu", {}),
    ("ssh://-oProxyCommand=sh@box/cpu", {}),
    ("ssh://box/cpu", {"user": "-oProxyCommand=sh"}),
    ("ssh://box/cpu", {"port": "22 -oProxyCommand=sh"}),
])
def test_hosts_users_and_ports_that_could_be_read_as_ssh_options_are_refused(spec, options):
    with pytest.raises(QueueError, match="option"):
        scheduler_for(spec, options)


def test_the_destination_comes_after_a_double_dash(tmp_path):
    sch = scheduler_for("ssh://me@box/gpu:0", {})
    argv = sch.ssh_argv()
    assert argv[-2:] == ["--", "me@box"]
    assert sch.control_argv("exit")[-2:] == ["--", "me@box"]


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"imf-ssh-{os.getuid()}"


def test_the_control_folder_is_made_private(private_tmp):
    from imf.scheduler.ssh import control_dir
    assert control_dir() == private_tmp and private_tmp.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("make, words", [
    (lambda p: (p.mkdir(), p.chmod(0o777)), "group or world"),
    (lambda p: (p.mkdir(), p.chmod(0o770)), "group or world"),
    (lambda p: (p.parent.joinpath("elsewhere").mkdir(mode=0o700), p.symlink_to("elsewhere")),
     "not a folder"),
    (lambda p: (p.mkdir(mode=0o700), os.chown(p, 65534, 65534)), "not yours"),
])
def test_a_control_folder_that_others_could_use_is_refused(private_tmp, make, words):
    from imf.scheduler.ssh import control_dir
    if "yours" in words and os.geteuid() != 0:
        pytest.skip("making a folder owned by another user needs root")
    make(private_tmp)
    with pytest.raises(QueueError, match=words):
        control_dir()


def test_the_master_connection_is_keyed_on_the_options_and_closed_with_the_scheduler(sshd, tmp_path):
    options = sshd.host_options(tmp_path)
    sch = scheduler_for(sshd.spec("cpu"), options)
    other = scheduler_for(sshd.spec("cpu"), {**options, "ssh_options": options["ssh_options"][:-2]})
    path = next(a for a in sch.ssh_argv() if a.startswith("ControlPath="))
    assert path != next(a for a in other.ssh_argv() if a.startswith("ControlPath="))
    sch.check()  # opens the master
    check = lambda: subprocess.run(sch.control_argv("check"), capture_output=True, timeout=30)  # noqa: E731
    assert check().returncode == 0
    sch.close()
    assert check().returncode != 0


@pytest.mark.slow
def test_cancel_stops_remote_jobs_over_ssh(sshd, tmp_path):
    remote = tmp_path / "remote"
    hosts = sshd.hosts_file(tmp_path / "hosts.yaml", remote, [sshd.spec("cpu")])
    controller = sweep_controller(tmp_path / "runs", "rc", ["--epoch-s", "0.5"], "--grid", "64x1",
                                  "--hosts", str(hosts), "--epochs", "200", "--poll", "0.2",
                                  "--stall-timeout", "300")
    pid_file = remote / "rc" / "rc-causal-e64-l1-s42" / "fake.pid"
    try:
        wait_for(lambda: pid_file.is_file() and pid_file.read_text().strip(), timeout=120)
        pid = int(pid_file.read_text())
        proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "--cancel", str(tmp_path / "runs" / "rc")],
                              capture_output=True, text=True, timeout=300)
        controller.wait(120)
    finally:
        if controller.poll() is None:
            controller.kill()
    assert proc.returncode == 0 and "cancelled 1 trial(s)" in proc.stdout, proc.stderr
    def gone() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True
    wait_for(gone, timeout=30)
    trial = json.loads((tmp_path / "runs" / "rc" / "sweep.json").read_text())["trials"][0]
    assert trial["state"] == "pending" and trial["history"][-1]["outcome"] == "cancelled"


def test_a_remote_start_revoked_on_its_way_runs_nothing_and_a_late_older_start_is_refused(sshd, tmp_path):
    # a controller died while its ssh start was on its way; the resumed one revoked that attempt
    from dataclasses import replace

    from imf.scheduler.base import Handle
    from imf.scheduler.claim import new_token
    sch = scheduler_for(sshd.spec("cpu"), sshd.host_options(tmp_path / "remote"))
    late = JobRequest("j", "s", tmp_path / "home" / "j", ["sh", "-c", "echo ran >> ran.txt"], "smoke",
                      token=new_token())
    folder = Path(sch.job_dir(late))
    assert sch.revoke(Handle(sch.spec, str(folder), str(late.run_dir), late.token))
    with pytest.raises(QueueError, match="was revoked"):
        sch.start(late)  # the dead controller's start arrives after all
    assert not (folder / "ran.txt").exists() and not (folder / "pid").exists()
    older = replace(late, token=new_token())  # made first, arrives last
    newer = replace(late, token=new_token([older.token]))
    handle = sch.start(newer)
    wait_for(lambda: sch.poll(handle).state == "exited", timeout=60)
    assert not sch.revoke(handle)  # it started: nothing to revoke
    with pytest.raises(QueueError, match="a newer attempt"):
        sch.start(older)
    assert (folder / "ran.txt").read_text() == "ran\n" and not (folder / "attempts").exists()


def test_a_remote_job_started_as_its_controller_died_is_re_attached_not_started_again(
        sshd, tmp_path, monkeypatch):
    from imf.scheduler.base import Handle
    from imf.scheduler.claim import new_token
    from imf.sweep.engine import Engine
    from imf.sweep.launch import plan_sweep, resume_sweep
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.05", "--ledger", str(ledger)))
    hosts = sshd.hosts_file(tmp_path / "hosts.yaml", tmp_path / "remote")
    sdir, state, _ = plan_sweep(SweepRequest(config="smoke", grids=["64x1,2"], hosts=str(hosts), name="r",
                                             queues=[sshd.spec("cpu"), sshd.spec("cpu")],
                                             out=tmp_path / "runs", epochs=2, poll=0.1, stall_timeout=60))
    engine, jobs = Engine(sdir, state, lambda s: None), {}
    for trial in state.trials:  # as _launch leaves them: "starting", the token saved, no pid yet
        jobs[trial.id] = job = engine.job_request(trial)
        job.token = new_token()
        trial.move("launch")
        trial.handle = Handle(trial.queue, engine.scheduler(trial.queue).job_dir(job), str(job.run_dir), job.token)
    sdir.save(state)
    landed, lost = state.trials
    engine.scheduler(landed.queue).start(jobs[landed.id])  # this start got there, the other not yet
    for sch in engine.schedulers.values():
        sch.close()
    resume_sweep(sdir.path, lambda s: None)
    with pytest.raises(QueueError, match="a newer attempt"):  # the lost start arrives now
        scheduler_for(sshd.spec("cpu"), load_hosts(hosts)["hosts"]["127.0.0.1"]).start(jobs[lost.id])
    data = json.loads((sdir.path / "sweep.json").read_text())
    for t in data["trials"]:
        assert t["state"] == "completed" and t["attempts"] == 1 and len(t["history"]) == 1, t
    assert sorted(ledger.read_text().split()[::2]) == sorted(jobs)  # each ran to its end once
    log = (sdir.path / "sweep.log").read_text()
    assert f"re-attached {landed.id}" in log and f" start {landed.id} " not in log
    assert f"{lost.id} had not started when the controller stopped; its start is revoked" in log


def _python_without_imf(folder: Path) -> Path:
    """An interpreter that cannot import imf: isolated (-I) and without its site-packages (-S)."""
    python = folder / "python-without-imf"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
    python.chmod(0o755)
    return python


def test_a_host_that_cannot_import_imf_refuses_the_start_and_the_dry_run_alike(sshd, tmp_path):
    import yaml
    from imf_process import run_imf
    options = {**sshd.host_options(tmp_path / "remote"), "python": str(_python_without_imf(tmp_path))}
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": {"127.0.0.1": options}}))
    spec = sshd.spec("gpu:0")
    args = ["sweep", "smoke", "--grid", "32x1,2", "--epochs", "1", "--poll", "0.1", "--queue", spec,
            "--queue", "local:cpu", "--hosts", str(hosts), "--out", str(tmp_path / "runs"), "--name", "n"]
    env = {"IMF_TRIAL_COMMAND": fake_command("--epoch-s", "0.01")}
    for extra in (["--dry-run"], []):  # the dry run refuses where and as the start refuses
        out = run_imf(*args, *extra, cwd=tmp_path, env=env)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1, out.stderr
        assert lines[0].startswith(f"imf: error: 1 of 2 queues passed their check, 2 needed (--min-queues): "
                                   f"{spec}: '{options['python']}' on 127.0.0.1 cannot import imf "
                                   "(ModuleNotFoundError: No module named 'imf')"), lines[0]
        assert lines[0].endswith("start with fewer (--min-queues 1)")
        assert not (tmp_path / "runs").exists()  # nothing written: the same command runs once it is fixed
    out = run_imf(*args, "--min-queues", "1", cwd=tmp_path, env=env)  # on what passed
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "runs" / "n" / "sweep.json").read_text())
    assert all(t["state"] == "completed" and t["queue"] == "local:cpu" for t in data["trials"])
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"imf: sweep n finished on fewer queues; down: {spec} (") and "cannot import imf" in last
    assert f"queue {spec} is down: " in (tmp_path / "runs" / "n" / "sweep.log").read_text()


def test_a_plugin_is_checked_on_the_host_with_the_hosts_env(sshd, tmp_path, monkeypatch):
    import yaml
    from plugin_fakes import fake_distribution
    from imf import registry
    from imf.sweep.launch import dry_run
    site = fake_distribution(tmp_path / "site", "imf-env-mask", "imf_env_mask",
                             "import os\nif os.environ.get('IMF_TEST_BROKEN_HOST'):\n"
                             "    raise ImportError('this host has no numpy of the right version')\n"
                             "from imf.attention import causal as mask\n",
                             {"imf.masks": {"envmask": "imf_env_mask:mask"}})
    monkeypatch.syspath_prepend(str(site))  # the controller has it
    options = sshd.host_options(tmp_path / "remote")
    hosts = tmp_path / "hosts.yaml"
    req = SweepRequest(config="smoke", grids=["32x1"], queues=[sshd.spec("cpu")], hosts=str(hosts),
                       mask="envmask", name="m", out=tmp_path / "runs")
    try:
        hosts.write_text(yaml.safe_dump({"hosts": {"127.0.0.1": {**options, "env": {"PYTHONPATH": str(site)}}}}))
        text = dry_run(req)  # the host finds the plugin through its env, as its trials will
        assert f"  {sshd.spec('cpu')}: ok" in text
        broken = {"PYTHONPATH": str(site), "IMF_TEST_BROKEN_HOST": "1"}
        hosts.write_text(yaml.safe_dump({"hosts": {"127.0.0.1": {**options, "env": broken}}}))
        with pytest.raises(SweepError, match=rf"^no queue passed its check: {sshd.spec('cpu')}: 127.0.0.1:"
                                             rf"{sshd.port} cannot load imf.masks plugin 'envmask'.*"
                                             r"ImportError: this host has no numpy"):
            dry_run(req)
    finally:
        registry.clear_cache()


def test_a_trainer_programs_two_trial_sweep_runs_over_ssh_onto_the_scoreboard(sshd, tmp_path, monkeypatch):
    """A command trainer (docs/trainers.md) on an SSH queue: the example program runs in the
    remote folders, its files come home, the controller records each trial by the metric's goal."""
    monkeypatch.delenv("IMF_TRIAL_COMMAND", raising=False)
    remote = tmp_path / "remote"
    hosts = sshd.hosts_file(tmp_path / "hosts.yaml", remote, [sshd.spec("cpu")])
    toy = Path(__file__).resolve().parents[1] / "examples" / "trainers" / "toy.yaml"
    req = SweepRequest(config=str(toy), grids=["optim.lr=0.02,0.1"], overrides=["optim.steps=100"],
                       hosts=str(hosts), name="toy", out=tmp_path / "runs", poll=0.2, stall_timeout=120)
    start_sweep(req, lambda s: None)
    sweep_dir = tmp_path / "runs" / "toy"
    data = json.loads((sweep_dir / "sweep.json").read_text())
    assert all(t["state"] == "completed" and t["queue"].startswith("ssh://") for t in data["trials"]), data["trials"]
    records = {r["id"]: r for r in ScoreboardStore(sweep_dir).read()}
    assert sorted(records) == ["toy-lr0.02-s0", "toy-lr0.1-s0"]
    for tid, record in records.items():
        summary = json.loads((sweep_dir / tid / "summary.json").read_text())
        assert record["score"] == summary["best_score"] == -summary["metric"]["value"] < 0  # goal minimize
        assert (remote / "toy" / tid / "best.pt").is_file() and (sweep_dir / tid / "best.pt").is_file()
    board = json.loads((sweep_dir / "scoreboard.json").read_text())
    assert board["best"]["value"] == max(r["score"] for r in records.values())
