"""A remote trial brings home everything a local one leaves (or what ``fetch: results`` keeps),
over a real sshd on 127.0.0.1; the report, ``imf ensemble`` and ``imf trial --resume`` read it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _sweep_helpers import SSHD, fake_command, start_sshd

from imf.errors import SweepError
from imf.sweep.launch import SweepRequest, start_sweep

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.exists(SSHD), reason=f"no sshd at {SSHD}")]
WRAPPER_ONLY = {"claim"}  # written by the remote wrapper for the remote folder: comes home too


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def _hosts(sshd, tmp_path: Path, **options) -> Path:
    path = tmp_path / "hosts.yaml"
    entry = {**sshd.host_options(tmp_path / "remote", gpus=None), **options}
    path.write_text(yaml.safe_dump({"hosts": {"127.0.0.1": entry}}))
    return path


def _request(sshd, tmp_path: Path, hosts: Path, **kw) -> SweepRequest:
    base = dict(config="smoke", grids=["64x1"], queues=[sshd.spec("cpu")], hosts=str(hosts), name="f",
                out=tmp_path / "runs", epochs=3, poll=0.1, stall_timeout=60, retries=1)
    return SweepRequest(**{**base, **kw})


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and not p.relative_to(folder).as_posix().startswith("attempts/")}


def test_an_ssh_trial_brings_home_its_whole_folder_and_earlier_attempts(sshd, tmp_path, monkeypatch):
    # attempt 1 fails on the host, attempt 2 completes: the home folder is attempt 2's remote
    # folder file for file, and attempt 1's files (fetched when it ended) sit in attempts/1
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02", "--extras", "--fail-on", "e64"))
    start_sweep(_request(sshd, tmp_path, _hosts(sshd, tmp_path)), lambda line: None)
    trial = "f-causal-e64-l1-s42"
    home, remote = tmp_path / "runs" / "f" / trial, tmp_path / "remote" / "f" / trial
    state = json.loads((home.parent / "sweep.json").read_text())["trials"][0]
    assert state["state"] == "completed" and state["attempts"] == 2
    there, here = _tree(remote), _tree(home)
    assert there == here, sorted(set(there) ^ set(here))
    for name in ("swanlog/run-fake/files/config.yaml", "checkpoints/latest.pt", "checkpoints/best.pt",
                 "final_eval.json", "holdout.json"):
        assert name in here, name
    assert any(name.startswith("checkpoints/epoch=0002-test_mean_score=") for name in here)  # top-k
    assert "failing on purpose" in (home / "attempts" / "1" / "stdout.log").read_text()
    assert not (home / "attempts" / "2").exists() and not list(home.parent.glob(".*.tmp"))
    report = (home.parent / "report.md").read_text()
    assert "ranked by selection score" in report  # final_eval.json came home and ranks


def test_fetch_results_leaves_the_checkpoints_on_the_host(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02", "--extras"))
    start_sweep(_request(sshd, tmp_path, _hosts(sshd, tmp_path, fetch="results")), lambda line: None)
    trial = "f-causal-e64-l1-s42"
    here = set(_tree(tmp_path / "runs" / "f" / trial))
    assert {"summary.json", "logs.json.txt", "stdout.log", "checkpoints/best.pt", "final_eval.json",
            "holdout.json"} <= here
    assert not {"checkpoints/latest.pt", "swanlog/run-fake/files/config.yaml"} & here
    assert (tmp_path / "remote" / "f" / trial / "checkpoints" / "latest.pt").is_file()


def test_an_unknown_fetch_value_is_refused_before_anything_is_written(sshd, tmp_path):
    with pytest.raises(SweepError, match="fetch 'everything': expected one of all, results"):
        start_sweep(_request(sshd, tmp_path, _hosts(sshd, tmp_path, fetch="everything")), lambda line: None)
    assert not (tmp_path / "runs").exists()


def test_a_real_remote_trial_is_reported_ensembled_and_resumed_at_home(sshd, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IMF_TRIAL_COMMAND"}
    env.setdefault("SWANLAB_MODE", "offline")
    hosts = _hosts(sshd, tmp_path)
    out = tmp_path / "runs"
    imf = [sys.executable, "-m", "imf"]
    sweep = [*imf, "sweep", "smoke", "--grid", "32x1", "--queue", sshd.spec("cpu"), "--hosts", str(hosts),
             "--name", "real", "--out", str(out), "--epochs", "2", "--final-eval", "2", "--poll", "1",
             "training.checkpoint_topk=2"]
    proc = subprocess.run(sweep, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    home = out / "real" / "real-causal-e32-l1-s42"
    summary = json.loads((home / "summary.json").read_text())
    for name in ("checkpoints/latest.pt", summary["checkpoints"]["best"], *summary["checkpoints"]["topk"],
                 "final_eval.json", "config.yaml"):
        assert (home / name).is_file(), name
    assert list((home / "swanlog").iterdir())  # the offline SwanLab run, for swanlab sync
    report = subprocess.run([*imf, "report", str(out / "real")], env=env, capture_output=True, text=True,
                            timeout=600)
    assert report.returncode == 0 and "ranked by selection score (2 selection episodes)" in report.stdout
    ensemble = subprocess.run([*imf, "ensemble", str(home), "--top", "2", "--mode", "weights",
                               "--final-eval", "2"], env=env, capture_output=True, text=True, timeout=900)
    assert ensemble.returncode == 0, ensemble.stderr[-2000:]
    resumed = subprocess.run([*imf, "trial", "--resume", "--out", str(home)], env=env,
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-2000:]  # from the latest.pt that came home
    assert json.loads((home / "summary.json").read_text())["epochs_done"] == 2


def test_a_resume_on_another_host_gets_the_latest_pt_kept_home_and_an_occupied_folder_keeps_its_own(
        sshd, tmp_path):
    from imf.scheduler.base import JobRequest, scheduler_for
    from _sweep_helpers import wait_for
    home = tmp_path / "home" / "t1"
    (home / "checkpoints").mkdir(parents=True)
    (home / "checkpoints" / "latest.pt").write_text("epoch 4")  # kept home while it ran elsewhere
    (home / "config.yaml").write_text("from home")
    argv = ["sh", "-c", "cat checkpoints/latest.pt > started.txt"]
    resume = ["sh", "-c", "cat checkpoints/latest.pt config.yaml > resumed.txt"]
    job = JobRequest("t1", "s", home, argv, "smoke", token="a1", resume_argv=resume, resume=True)
    sch = scheduler_for(sshd.spec("cpu"), sshd.host_options(tmp_path / "remote"))
    try:
        sch.start(job)
        remote = tmp_path / "remote" / "s" / "t1"
        wait_for(lambda: (remote / "resumed.txt").is_file() and (remote / "resumed.txt").read_text())
        assert (remote / "resumed.txt").read_text() == "epoch 4from home"
        (tmp_path / "home" / "t2" / "checkpoints").mkdir(parents=True)
        (tmp_path / "home" / "t2" / "checkpoints" / "latest.pt").write_text("epoch 9")
        (tmp_path / "remote" / "s" / "t2").mkdir(parents=True)
        (tmp_path / "remote" / "s" / "t2" / "stdout.log").write_text("an earlier attempt here\n")
        sch.start(JobRequest("t2", "s", tmp_path / "home" / "t2", argv, "smoke", token="a2",
                             resume_argv=resume, resume=True))
        other = tmp_path / "remote" / "s" / "t2"
        wait_for(lambda: (other / "exit_code").is_file())
        assert not (other / "resumed.txt").exists() and (other / "attempts" / "1" / "stdout.log").is_file()
    finally:
        sch.close()
