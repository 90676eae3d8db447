"""The fault drills that run real `imf trial` processes (benchmarks/drills/drills.py runs them too).

- one-folder: a second trial and a --resume into the run folder of a live trial; exactly one
  runs, the others are refused, the scoreboard's record is the one that ran.
- disk-full-sweep: a sweep of real trials on a 1.5 MB tmpfs; every trial hits ENOSPC, the
  queues are blocked without burning retries; the tmpfs is grown ("space freed") and
  `imf sweep --resume` finishes every trial once (needs root to mount).
- sigterm-resume: SIGTERM to a running trial; it ends "interrupted" with exit 143, and
  `imf trial --resume` completes it without repeating an epoch in logs.json.txt.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ["training.max_train_steps=3", "training.batch_size=8", "eval.n_test=1", "eval.n_train=0",
        "eval.max_steps=8", "eval.n_workers=1", "data.demo_episodes=4", "logging.trackers=none"]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "SWANLAB_MODE": "disabled"}


def _imf(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "imf", *args], cwd=cwd, env=_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _trial(cache: Path, *args: str) -> list[str]:
    return ["trial", "smoke", *TINY, f"data.cache_dir={cache}", *args]


def _demos(root: Path) -> Path:
    from imf.pusht import ensure_demo_dataset
    ensure_demo_dataset(4, seed=0, cache_dir=str(root / "cache"))
    return root / "cache"


def _epochs(run: Path) -> list[int]:
    path = run / "logs.json.txt"
    return [json.loads(line)["epoch"] for line in path.read_text().splitlines()] if path.exists() else []


def _wait_epochs(run: Path, n: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while len(_epochs(run)) < n:
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"{run}: the trial ended or stalled before epoch {n}: {proc.communicate()}")
        time.sleep(0.1)


def _repeats(epochs: list[int]) -> int:
    return len(epochs) - len(set(epochs))


def _temps(root: Path) -> int:
    return sum(1 for _ in root.rglob("*.tmp"))


def drill_one_folder(root: Path) -> str:
    started, cache = time.monotonic(), _demos(root)
    run = root / "runs" / "r4"
    first = _imf(*_trial(cache, "training.num_epochs=30", "--out", str(run), "--id", "r4"), cwd=root)
    _wait_epochs(run, 1, first)
    others = [_imf(*_trial(cache, "training.num_epochs=2", "--out", str(run), "--id", "r4"), cwd=root),
              _imf("trial", "--resume", "--out", str(run), cwd=root)]
    refused = sum(p.wait(600) == 2 and "is in use by trial r4" in p.communicate()[1] for p in others)
    ran = int(first.wait(600) == 0)
    from imf.store import ScoreboardStore
    records = ScoreboardStore(run.parent).read()
    summary = json.loads((run / "summary.json").read_text())
    matches = (len(records) == 1 and records[0]["epochs"] == 30 == summary["epochs_done"]
               and records[0]["score"] == summary["best_score"] and _epochs(run) == list(range(30)))
    return (f"one-folder: trials that ran {ran}/1, refused {refused}/2, the record is the run "
            f"that ran: {'yes' if matches else 'NO'}, epochs repeated {_repeats(_epochs(run))}, "
            f"attempts moved aside {len(list((run / 'attempts').glob('*')))}, leftover temp files "
            f"{_temps(root)} ({time.monotonic() - started:.0f} s)")


def drill_disk_full_sweep(root: Path) -> str:
    started, cache = time.monotonic(), _demos(root)
    disk = root / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1500k", "imf-drill", str(disk)],
                      capture_output=True).returncode != 0:
        return "disk-full-sweep: skipped (cannot mount a tmpfs: needs root)"
    try:
        sweep = ["sweep", "smoke", *TINY, f"data.cache_dir={cache}", "training.rollout_every=1",
                 "--grid", "32x1,2", "--epochs", "3", "--name", "d", "--out", str(disk),
                 "--queue", "local:cpu", "--queue", "local:cpu", "--poll", "0.2", "--retries", "1"]
        ctl = _imf(*sweep, cwd=root)
        _, err = ctl.communicate(timeout=600)
        blocked = ctl.returncode == 2 and "every queue is down or blocked" in err
        log = (disk / "d" / "sweep.log").read_text()
        named = "disk full: imf: error: no space left on device" in log
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # space freed
        again = _imf("sweep", "--resume", str(disk / "d"), cwd=root)
        again.communicate(timeout=600)
        trials = json.loads((disk / "d" / "sweep.json").read_text())["trials"]
        done = sum(t["state"] == "completed" for t in trials)
        burned = sum(h["outcome"] == "failed" for t in trials for h in t["history"])
        whole = _all_whole(disk / "d")
        return (f"disk-full-sweep: failure named in sweep.log {'yes' if named else 'NO'}, queues "
                f"blocked {'yes' if blocked else 'NO'}, retries burned {burned}, after --resume "
                f"completed {done}/{len(trials)}, files half-written {whole}, leftover temp files "
                f"{_temps(disk)} ({time.monotonic() - started:.0f} s)")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _all_whole(folder: Path) -> int:
    """How many logs, summaries and checkpoints under ``folder`` do not read back whole."""
    import torch
    bad = 0
    for path in folder.rglob("*"):
        try:
            if path.name == "logs.json.txt":
                [json.loads(line) for line in path.read_text().splitlines()]
            elif path.name == "summary.json" or path.name == "sweep.json":
                json.loads(path.read_text())
            elif path.suffix == ".pt":
                torch.load(path, weights_only=False)
        except Exception:
            bad += 1
    return bad


def drill_sigterm_resume(root: Path) -> str:
    started, cache = time.monotonic(), _demos(root)
    run = root / "r5"
    proc = _imf(*_trial(cache, "training.num_epochs=20", "training.checkpoint_every=3", "--out", str(run),
                        "--id", "r5", "--store", "none"), cwd=root)
    _wait_epochs(run, 4, proc)
    os.kill(proc.pid, signal.SIGTERM)
    code = proc.wait(600)
    status = json.loads((run / "summary.json").read_text())
    interrupted = (status["status"], status["reason"]) == ("interrupted", "SIGTERM")
    resumed = _imf("trial", "--resume", "--out", str(run), cwd=root)
    resumed.communicate(timeout=600)
    final = json.loads((run / "summary.json").read_text())["status"]
    epochs = _epochs(run)
    return (f"sigterm-resume: exit {code}, status interrupted {'yes' if interrupted else 'NO'} "
            f"after {status['epochs_done']} epochs, then --resume {final}, epochs logged "
            f"{len(epochs)}/20, repeated {_repeats(epochs)}, leftover temp files {_temps(root)} "
            f"({time.monotonic() - started:.0f} s)")


TRIAL_DRILLS = {"one-folder": drill_one_folder, "disk-full-sweep": drill_disk_full_sweep,
                "sigterm-resume": drill_sigterm_resume}
