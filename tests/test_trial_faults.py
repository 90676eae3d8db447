"""Fault drills of one trial through real processes: two trials into one run folder, SIGTERM and
SIGINT (whatever the inherited disposition), a full disk on a real tmpfs."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from imf.store.scoreboard import ScoreboardStore

pytestmark = pytest.mark.slow  # starts processes and trains

TINY = ["training.max_train_steps=3", "training.batch_size=8", "eval.n_test=1", "eval.n_train=0",
        "eval.max_steps=8", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    from imf.pusht.expert import ensure_demo_dataset
    folder = tmp_path_factory.mktemp("demos")
    ensure_demo_dataset(4, seed=0, cache_dir=str(folder))
    return folder


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "imf", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "SWANLAB_MODE": "offline"}


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(_cmd(*args), cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)


def _start(*args: str, cwd: Path, ignore_sigint: bool = False) -> subprocess.Popen:
    def setup() -> None:  # as a shell's background job: SIGINT ignored, its own process group
        os.setpgrp()
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return subprocess.Popen(_cmd(*args), cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=setup)


def _epochs(run: Path) -> list[int]:
    return [json.loads(line)["epoch"] for line in (run / "logs.json.txt").read_text().splitlines()]


def _wait_epochs(run: Path, n: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (run / "logs.json.txt").exists() and len(_epochs(run)) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError(f"{run}: fewer than {n} epochs within {timeout}s")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "trial.lock"}


def test_a_second_trial_a_resume_and_a_final_eval_into_a_live_run_folder_are_refused(cache, tmp_path):
    run = tmp_path / "runs" / "r4"
    first = _start("trial", "smoke", *TINY, f"data.cache_dir={cache}", "training.num_epochs=3",
                   "--out", str(run), "--id", "r4", cwd=tmp_path)
    _wait_epochs(run, 1, first)
    os.kill(first.pid, signal.SIGSTOP)  # live, holding its folder, for as long as the refusals take
    try:
        _refused_while_live(run, first, cache, tmp_path)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=600) == 0, first.communicate()
    assert _epochs(run) == list(range(3))  # one run's epochs, once each, in order
    records = ScoreboardStore(run.parent).read()
    assert [r["id"] for r in records] == ["r4"] and records[0]["epochs"] == 3
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["epochs_done"] == 3
    assert not (run / "trial.lock").exists()


def _refused_while_live(run: Path, first: subprocess.Popen, cache: Path, tmp_path: Path) -> None:
    for args in (["trial", "smoke", *TINY, f"data.cache_dir={cache}", "training.num_epochs=2",
                  "--out", str(run), "--id", "r4"],
                 ["trial", "--resume", "--out", str(run)],
                 ["trial", "smoke", *TINY, f"data.cache_dir={cache}", "--final-eval", "2",
                  "--out", str(run), "--id", "r4"]):
        second = _run(*args, cwd=tmp_path)
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2, second.stderr
        assert len(lines) == 1 and lines[0].startswith("imf: error: run folder"), second.stderr
        assert f"pid {first.pid} on " in lines[0] and "since 20" in lines[0]
        assert not (run / "attempts").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_the_trial_interrupted_and_resume_completes_it(cache, tmp_path, sig):
    run = tmp_path / "r5"
    proc = _start("trial", "smoke", *TINY, f"data.cache_dir={cache}", "training.num_epochs=10",
                  "training.checkpoint_every=3", "--out", str(run), "--id", "r5", "--store", "none",
                  cwd=tmp_path, ignore_sigint=True)
    _wait_epochs(run, 4, proc)
    os.kill(proc.pid, signal.SIGSTOP)  # held after epoch 4, so the signal lands well before epoch 10
    os.kill(proc.pid, sig)
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + sig, err
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["reason"]) == ("interrupted", sig.name)
    assert summary["finished"] and not (run / "trial.lock").exists()
    assert f"{sig.name}: stopped after" in out and "--resume" in out
    done = summary["epochs_done"]
    assert done < 10 and _epochs(run) == list(range(done))
    import torch
    assert torch.load(run / "checkpoints" / "latest.pt", weights_only=False)["epoch"] == done - 1
    again = _run("trial", "--resume", "--out", str(run), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert _epochs(run) == list(range(10))  # never an epoch twice
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1200k", f"imf-test-{uuid.uuid4().hex[:6]}",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not root'})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_one_line_a_failed_summary_and_nothing_half_written(cache, tmp_path, small_disk):
    run = small_disk / "r2"
    out = _run("trial", "smoke", *TINY, f"data.cache_dir={cache}", "training.num_epochs=6",
               "training.rollout_every=1", "training.checkpoint_every=1", "--out", str(run),
               "--store", "none", cwd=tmp_path)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 75, out.stderr
    assert len(lines) == 1 and lines[0].startswith("imf: error: no space left on device writing "), out.stderr
    assert "MB free)" in lines[0]
    assert not list(small_disk.rglob("*.tmp")) and not list(small_disk.rglob(".*tmp"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "failed" and "no space left" in summary["reason"]
    for line in (run / "logs.json.txt").read_text().splitlines():
        json.loads(line)  # every line complete
    for ckpt in (run / "checkpoints").glob("*.pt"):
        import torch
        torch.load(ckpt, weights_only=False)  # every checkpoint left is whole
    assert not (run / "trial.lock").exists()
