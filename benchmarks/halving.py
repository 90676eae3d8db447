"""Successive halving on planted curves: is the best ever stopped, and how many slot-hours go?

Each planting is a sweep of stand-in trials (tests/fake_trial.py --plant) whose rollouts are
drawn from known curves: every trial's true mean score at epoch e is m * (0.4 + 0.6 e / E),
with m = 0.85 for the planted best *and* for its twin (a planted tie), the others uniform in
[0.2, 0.8]; each rollout is --episodes per-episode scores drawn from Beta(2 mu, 2 (1 - mu)) (mean
mu, a spread like PushT's coverage scores). Which seeds get the best and its twin is random.
The real engine runs each planting twice on local:cpu slots, with ``--halving ETA --rungs
...`` and without, on the same drawn scores; slot time is the sum over trials of the time a
slot held the trial (sweep.json ``elapsed_s``).

    python benchmarks/halving.py [--plantings 20] [--trials 9] [--slots 3] [--eta 3]
        [--rungs 2,4] [--epochs 8] [--epoch-s 0.3] [--episodes 50] [--no-write]

Writes its section of benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _sweep_helpers import fake_command  # noqa: E402
from results_file import write_section  # noqa: E402

from imf.sweep.launch import SweepRequest, plan_sweep, start_sweep  # noqa: E402

SECTION = "## Successive halving (benchmarks/halving.py)"
BEST = 0.85


@dataclass
class Outcome:
    best_stopped: int  # of the planted best and its twin, how many were stopped
    stopped: int
    min_gap_stopped: float | None  # smallest planted final gap to the best among stopped trials
    slot_s: float
    full_slot_s: float
    epochs: int
    full_epochs: int
    wall_s: float
    full_wall_s: float
    top_is_best: bool  # the halving sweep's best scored trial is the planted best or its twin


def request(args: argparse.Namespace, out: Path, name: str, halving: bool) -> SweepRequest:
    seeds = ",".join(str(i) for i in range(1, args.trials + 1))
    return SweepRequest(config="smoke", grids=[f"seed={seeds}"], queues=["local:cpu"] * args.slots,
                        name=name, out=out, epochs=args.epochs, poll=0.1, stall_timeout=120.0,
                        halving=args.eta if halving else None, rungs=args.rungs if halving else None)


def planting(rng: random.Random, ids: list[str], args: argparse.Namespace) -> tuple[dict, dict]:
    """(true final means by trial id, per-episode rollouts by id and epoch)."""
    best, twin = rng.sample(ids, 2)
    means = {tid: BEST if tid in (best, twin) else rng.uniform(0.2, 0.8) for tid in ids}
    rollouts = {}
    for tid, m in means.items():
        rollouts[tid] = {}
        for epoch in range(2, args.epochs + 1, 2):
            mu = m * (0.4 + 0.6 * epoch / args.epochs)
            rollouts[tid][str(epoch)] = [round(rng.betavariate(2 * mu, 2 * (1 - mu)), 4)
                                         for _ in range(args.episodes)]
    return means, rollouts


def run_sweep(req: SweepRequest, plant: Path, epoch_s: float) -> tuple[dict, float]:
    os.environ["IMF_TRIAL_COMMAND"] = fake_command("--epoch-s", str(epoch_s), "--plant", str(plant))
    t0 = time.perf_counter()
    start_sweep(req, lambda line: None)
    wall = time.perf_counter() - t0
    return json.loads((Path(req.out) / str(req.name) / "sweep.json").read_text()), wall


def one(args: argparse.Namespace, folder: Path, index: int) -> Outcome:
    rng = random.Random(1000 + index)
    halved_req, full_req = (request(args, folder, f"p{index}-h", True),
                            request(args, folder, f"p{index}-f", False))
    _, state, _ = plan_sweep(halved_req)
    means, rollouts = planting(rng, [t.id for t in state.trials], args)
    # the two sweeps' ids differ only in the sweep name: the same draws under both names
    plant = folder / f"p{index}.json"
    full_ids = {t.id.replace(f"p{index}-h-", f"p{index}-f-", 1): r for t, r in
                ((t, rollouts[t.id]) for t in state.trials)}
    plant.write_text(json.dumps({**rollouts, **full_ids}))
    halved, wall = run_sweep(halved_req, plant, args.epoch_s)
    full, full_wall = run_sweep(full_req, plant, args.epoch_s)
    stopped = [t for t in halved["trials"] if t["state"] == "stopped_early"]
    gaps = [BEST - means[t["id"]] for t in stopped]
    scored = [t for t in halved["trials"] if t["best_score"] is not None]
    top = max(scored, key=lambda t: t["best_score"])["id"]
    return Outcome(best_stopped=sum(means[t["id"]] == BEST for t in stopped), stopped=len(stopped),
                   min_gap_stopped=min(gaps) if gaps else None,
                   slot_s=sum(t["elapsed_s"] or 0 for t in halved["trials"]),
                   full_slot_s=sum(t["elapsed_s"] or 0 for t in full["trials"]),
                   epochs=sum(t["epoch"] for t in halved["trials"]),
                   full_epochs=sum(t["epoch"] for t in full["trials"]),
                   wall_s=wall, full_wall_s=full_wall, top_is_best=means[top] == BEST)


def section(args: argparse.Namespace, results: list[Outcome]) -> list[str]:
    n = len(results)
    slot, full = sum(r.slot_s for r in results), sum(r.full_slot_s for r in results)
    epochs, full_epochs = sum(r.epochs for r in results), sum(r.full_epochs for r in results)
    wall, full_wall = sum(r.wall_s for r in results), sum(r.full_wall_s for r in results)
    gaps = [r.min_gap_stopped for r in results if r.min_gap_stopped is not None]
    lines = [SECTION, "",
             f"{n} plantings of {args.trials} stand-in trials on {args.slots} local:cpu slots, "
             f"{args.epochs} epochs of {args.epoch_s:g} s, rollouts of {args.episodes} episodes at "
             f"every 2nd epoch; `--halving {args.eta} --rungs {args.rungs}` against the same sweep "
             f"without it, on the same drawn scores (the module docstring says how they are drawn); "
             f"`python benchmarks/halving.py`; {time.strftime('%Y-%m-%d')}, 2 shared cores.", "",
             "| planting | stopped | best or twin stopped | smallest true gap stopped | epochs run | "
             "slot s (halving / full) | wall s (halving / full) | halving's top is a planted best |",
             "|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(results):
        gap = "-" if r.min_gap_stopped is None else f"{r.min_gap_stopped:.3f}"
        lines.append(f"| {i} | {r.stopped} | {r.best_stopped} | {gap} | {r.epochs}/{r.full_epochs} | "
                     f"{r.slot_s:.1f} / {r.full_slot_s:.1f} | {r.wall_s:.1f} / {r.full_wall_s:.1f} | "
                     f"{'yes' if r.top_is_best else 'no'} |")
    lines += ["",
              f"- the planted best or its twin was stopped in {sum(r.best_stopped > 0 for r in results)} "
              f"of {n} plantings; halving's top trial was a planted best in "
              f"{sum(r.top_is_best for r in results)} of {n}",
              f"- {sum(r.stopped for r in results)} trials stopped of {n * args.trials}; the smallest "
              f"true final gap to the best among them: {min(gaps):.3f}" if gaps else "- nothing stopped",
              f"- slot time: {slot:.0f} s against {full:.0f} s for the full sweeps, "
              f"{100 * (1 - slot / full):.0f}% saved; epochs run: {100 * (1 - epochs / full_epochs):.0f}% "
              f"fewer; wall time {wall:.0f} s against {full_wall:.0f} s"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plantings", type=int, default=20)
    parser.add_argument("--trials", type=int, default=9)
    parser.add_argument("--slots", type=int, default=3)
    parser.add_argument("--eta", type=int, default=3)
    parser.add_argument("--rungs", default="2,4")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--epoch-s", type=float, default=0.3)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.plantings):
            results.append(one(args, Path(tmp), i))
            r = results[-1]
            print(f"planting {i}: stopped {r.stopped}, best stopped {r.best_stopped}, "
                  f"slot {r.slot_s:.1f}/{r.full_slot_s:.1f} s", flush=True)
    lines = section(args, results)
    print("\n".join(lines))
    if not args.no_write:
        write_section(SECTION, lines)


if __name__ == "__main__":
    main()
