"""Exactly once, under any timing: a controller SIGKILLed at every step of a trial's start and
end (imf/drill.py's kill points), then resumed, many times over, with stand-in trials that take
milliseconds (tests/fake_trial.py). Each round checks that no trial ran twice (the fake trial's
ledger), that each ended completed, and that its records agree: attempts equal to the history
entries, one final state, one scoreboard record.

    python benchmarks/drills_once.py --rounds 50     # 50 rounds at each kill point
    python benchmarks/drills_once.py --rounds 2 --no-write   # what CI runs (tests/test_drills_once.py)

Writes its line into benchmarks/RESULTS.md's drills section unless --no-write.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _sweep_helpers import fake_command  # noqa: E402

from imf.drill import DRILL_ENV, POINTS  # noqa: E402

GRID = "32,64x1,2"  # four trials on two slots: starts and ends overlap
SECTION = "## Exactly once (benchmarks/drills_once.py)"
KILL_AT_MOST = 4  # the controller dies the 1st..4th time it reaches the point


def _controller(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "imf", "sweep", *args], env=env, cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)


def one_round(root: Path, point: str, nth: int) -> list[str]:
    """Kill the controller at ``point`` the ``nth`` time, resume until it finishes; the problems."""
    env = {**os.environ, "IMF_TRIAL_COMMAND": fake_command("--epoch-s", "0.01", "--ledger", str(root / "ledger")),
           "OMP_NUM_THREADS": "1"}
    first = _controller(["smoke", "--grid", GRID, "--epochs", "2", "--name", "d", "--out", str(root),
                         "--poll", "0.05", "--queue", "local:cpu", "--queue", "local:cpu"],
                        {**env, DRILL_ENV: f"{point}:{nth}"})
    resumes = 0
    while first.returncode != 0 and resumes < 5:  # killed (or a point reached in a resume)
        resumes += 1
        first = _controller(["--resume", str(root / "d"), "--poll", "0.05"], env)
    return check(root, first)


def check(root: Path, last: subprocess.CompletedProcess) -> list[str]:
    if last.returncode != 0:
        return [f"the sweep did not finish: exit {last.returncode}: {last.stderr.strip()[-300:]}"]
    deadline = time.monotonic() + 30  # a trial orphaned by the kill may still be writing its ledger
    state = json.loads((root / "d" / "sweep.json").read_text())
    ledger: Counter[str] = Counter()
    while time.monotonic() < deadline:
        ledger = Counter(line.split()[0] for line in (root / "ledger").read_text().splitlines()) \
            if (root / "ledger").exists() else Counter()
        if len(ledger) >= len(state["trials"]):
            break
        time.sleep(0.2)
    time.sleep(0.5)
    ledger = Counter(line.split()[0] for line in (root / "ledger").read_text().splitlines())
    board = Counter(t["id"] for t in json.loads((root / "d" / "scoreboard.json").read_text())["trials"])
    problems = []
    for trial in state["trials"]:
        tid = trial["id"]
        if ledger[tid] != 1:
            problems.append(f"{tid} ran {ledger[tid]} times")
        if trial["state"] != "completed":
            problems.append(f"{tid} ended {trial['state']}")
        if trial["attempts"] != len(trial["history"]):
            problems.append(f"{tid}: attempts {trial['attempts']} but {len(trial['history'])} history entries")
        if board[tid] != 1:
            problems.append(f"{tid}: {board[tid]} scoreboard records")
    return problems


def run(rounds: int, seed: int = 0) -> tuple[int, int, list[str]]:
    """(rounds run, rounds with a problem, the problems) over every kill point."""
    rng = random.Random(seed)
    failed, problems, done = 0, [], 0
    for point in POINTS:
        for _ in range(rounds):
            nth = rng.randint(1, KILL_AT_MOST)
            with tempfile.TemporaryDirectory(prefix="imf-once-") as tmp:
                found = one_round(Path(tmp), point, nth)
            done += 1
            if found:
                failed += 1
                problems += [f"{point}:{nth}: {p}" for p in found]
    return done, failed, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="rounds at each kill point")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    done, failed, problems = run(args.rounds)
    line = (f"exactly-once ({len(POINTS)} kill points x {args.rounds} rounds: the controller SIGKILLed "
            f"at a step of a trial's start or end, then resumed): rounds with a trial run twice, not "
            f"completed or with disagreeing records {failed}/{done} ({time.monotonic() - started:.0f} s)")
    print(line)
    for problem in problems[:20]:
        print("  " + problem)
    if not args.no_write:
        from results_file import write_section
        write_section(SECTION, [line, *(f"- {p}" for p in problems[:20])])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
