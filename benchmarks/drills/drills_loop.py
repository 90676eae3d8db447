"""The loop drill (benchmarks/drills/drills.py runs it too): `imf loop` SIGKILLed again and again.

- loop-kills: a 3-round loop of real tiny `imf trial` runs on two local CPU slots, its
  controller SIGKILLed at random moments 5 times and resumed with `imf loop --resume` after
  each; every round's trials must complete exactly once (one attempt, no archived attempt),
  ITERATION_LOG.md must hold exactly one block per round, each concluded.
"""
from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path

from drills_trial import TINY, _demos, _imf, _temps

LOOP = ["--rounds", "3", "--per-round", "2", "--queue", "local:cpu", "--queue", "local:cpu"]


def _alive_under(root: Path) -> int:
    """Processes whose command line names the drill's folder."""
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            count += str(root) in cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
    return count


def _base(root: Path, cache: Path) -> Path:
    proc = _imf("sweep", "smoke", "--grid", "32x1,2", "--queue", "local:cpu", "--queue", "local:cpu",
                "--name", "base", "--out", str(root), *TINY, "training.num_epochs=2",
                "eval.n_test=2", "eval.max_steps=16",  # a score and its noise for suggest's rules
                "sweep.poll_interval=0.5", f"data.cache_dir={cache}", cwd=root)
    _, err = proc.communicate(timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"base sweep exited {proc.returncode}: {err[-400:]}")
    return root / "base"


def _figures(folder: Path) -> tuple[int, int, int, int]:
    """(trials completed once, trials, hypothesis blocks, rounds concluded)."""
    loop = json.loads((folder / "loop.json").read_text())
    once = total = 0
    for round_ in loop["rounds"]:
        sweep = json.loads((folder / round_["sweep"] / "sweep.json").read_text())
        for t in sweep["trials"]:
            total += 1
            once += (t["state"] == "completed" and t["attempts"] == 1 and len(t["history"]) == 1
                     and not (folder / round_["sweep"] / t["id"] / "attempts").exists())
    text = (folder / "ITERATION_LOG.md").read_text()
    blocks = sum(line.startswith("### H") for line in text.splitlines())
    concluded = sum(r["status"] == "concluded" for r in loop["rounds"])
    return once, total, blocks, concluded


def drill_loop_kills(root: Path, kills: int = 5) -> str:
    started, cache = time.monotonic(), _demos(root)
    folder = _base(root, cache)
    proc = _imf("loop", str(folder), *LOOP, cwd=root)
    # A kill before loop.json exists leaves nothing to resume (`imf loop --resume` says so in one
    # line): the drill's kills land on a loop that has its state.
    while not (folder / "loop.json").exists() and proc.poll() is None:
        time.sleep(0.2)
    done = 0
    for _ in range(kills):
        time.sleep(random.uniform(0.5, 6.0))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done += 1
        proc = _imf("loop", "--resume", str(folder), cwd=root)
    _, err = proc.communicate(timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"imf loop --resume exited {proc.returncode}: {err[-400:]}")
    once, total, blocks, concluded = _figures(folder)
    time.sleep(3)
    return (f"loop-kills ({done} SIGKILLs): trials completed exactly once {once}/{total}, "
            f"hypothesis blocks {blocks} for {concluded} concluded round(s), leftover processes "
            f"{_alive_under(root)}, leftover temp files {_temps(root)} ({time.monotonic() - started:.0f} s)")


LOOP_DRILLS = {"loop-kills": drill_loop_kills}
