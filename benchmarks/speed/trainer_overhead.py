"""imf's bookkeeping around a program run as a trial (docs/trainers.md), and the example
trainer's best after two loop rounds against the best of its first grid.

Bookkeeping: `imf trial` around a program that does nothing but print its metric, N times in
one project (scoreboard and ITERATION_LOG recorded each time): the trial's wall time minus the
program's own (summary.json's elapsed_s, its interpreter's start included). The example: the
toy trainer's grid (model.features 8,32 x optim.lr 0.02,0.1, seeds 1,2) on two local:cpu
queues, then `imf loop --rounds 2`; the scoreboard's best metric after each.

    python benchmarks/speed/trainer_overhead.py [--trials 10] [--no-example]

Writes benchmarks/trainer_overhead.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "trainer_overhead.json"
NOTHING = ("trainer: command\nname: nothing\ncommand: [\"{python}\", -c, \"print('loss=1')\", \"{args}\"]\n"
           "params: {x: 0}\nmetric: {name: loss, goal: minimize, source: stdout}\n")


def imf(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SWANLAB_MODE": "offline"}
    done = subprocess.run([sys.executable, "-m", "imf", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"imf {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return done


def bookkeeping(trials: int, folder: Path) -> dict:
    config = folder / "nothing.yaml"
    config.write_text(NOTHING)
    walls, programs = [], []
    for i in range(trials):
        start = time.perf_counter()
        imf("trial", str(config), f"x={i}", "--id", f"t{i}", cwd=folder)
        walls.append(time.perf_counter() - start)
        programs.append(json.loads((folder / "runs" / f"t{i}" / "summary.json").read_text())["elapsed_s"])
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - start
    kept = [w - p for w, p in zip(walls, programs)]
    return {"trials": trials, "wall_s_median": statistics.median(walls), "program_s_median": statistics.median(programs),
            "bookkeeping_s_median": statistics.median(kept), "bookkeeping_s_max": max(kept),
            "python_start_s": bare, "recorded": len(json.loads((folder / "runs" / "scoreboard.json").read_text())["trials"])}


def best_metric(board: Path) -> float:
    best = json.loads(board.read_text())["best"]
    return -best["value"]  # val_mse, goal minimize: imf's score is its negation


def example(folder: Path) -> dict:
    config = ROOT / "examples" / "trainers" / "toy.yaml"
    imf("sweep", str(config), "--grid", "model.features=8,32", "--grid", "optim.lr=0.02,0.1", "--seeds", "1,2",
        "--queue", "local:cpu", "--queue", "local:cpu", "--out", str(folder), "--poll", "0.3", cwd=folder)
    board = folder / "toy" / "scoreboard.json"
    first = best_metric(board)
    start = time.perf_counter()
    imf("loop", str(folder / "toy"), "--rounds", "2", "--queue", "local:cpu", "--queue", "local:cpu", cwd=folder)
    trials = json.loads(board.read_text())["trials"]
    return {"grid_trials": 8, "grid_best_val_mse": first, "after_two_rounds_best_val_mse": best_metric(board),
            "trials_after_loop": len(trials), "loop_wall_s": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--no-example", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = {"bookkeeping": bookkeeping(args.trials, Path(tmp))}
    if not args.no_example:
        with tempfile.TemporaryDirectory() as tmp:
            result["example"] = example(Path(tmp))
    result["machine"] = f"{os.cpu_count()} CPUs (shared), {sys.platform}"
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
