"""Successive halving on planted curves: is the best ever stopped, and how many slot-hours go?

Each planting is a sweep of stand-in trials (tests/fake_trial.py --plant) whose rollouts are
drawn from known curves: a trial's true mean score at epoch e is m * (0.4 + 0.6 e / E), with
m = 0.85 for the planted best, uniform in [0.2, 0.75] for the others, and two of the others
planted as a tie (the same m). With ``--twin`` the best has a twin (a second trial at 0.85: a
true tie at the top). Each rollout is --episodes per-episode scores drawn from Beta(2 mu,
2 (1 - mu)) (mean mu, a spread like PushT's coverage scores); which seeds get which curve is
random. The real engine runs every planting with ``--halving ETA --rungs ...`` on local:cpu
slots; the first --full plantings also run without it, on the same drawn scores (the full
sweep's slot time does not depend on the scores). Slot time is the sum over trials of the
time a slot held the trial (sweep.json ``elapsed_s``). These rivals are all at least 0.10 below
the best: that the best is kept there says only that clearly worse rivals do not take it down.

With ``--near`` each planting is ``near_planting`` (the best, its twin and 2..7 rivals 0.5..1 SE
below it at every rollout; seeds 3000.., as benchmarks/learning/halving_sim.py draws them): it runs
through the real engine and through the simulation on the same scores, and the section says
whether both stopped the same trials and whether ``judge`` gives each engine decision again.

    python benchmarks/learning/halving.py [--plantings 20] [--twin | --near] [--full 3] [--trials 9] [--slots 3]
        [--eta 3] [--rungs 2,4] [--epochs 8] [--epoch-s 0.3] [--episodes 50] [--no-write]

Writes its section of benchmarks/RESULTS.md (one section per variant, with and without --twin).
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from _sweep_helpers import fake_command  # noqa: E402
from halving_plant import BEST, add_sweep_options, near_planting, planting, request  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

from imf.sweep import RungScore, SweepRequest, judge, plan_sweep, start_sweep  # noqa: E402

SECTION = "## Successive halving (benchmarks/learning/halving.py)"
TWIN_SECTION = "## Successive halving, the best with a planted twin (benchmarks/learning/halving.py --twin)"
NEAR_SECTION = "## Successive halving on near rivals through the real engine (benchmarks/learning/halving.py --near)"


@dataclass
class Outcome:
    stopped: int
    best_stopped: bool  # the planted best (the first of the two at 0.85 with --twin)
    twin_stopped: bool | None  # its twin, with --twin
    tie_split: bool  # one of the planted tie pair stopped, the other not
    min_gap_stopped: float | None  # smallest planted final gap to the best among stopped trials
    slot_s: float
    epochs: int
    full_epochs: int
    wall_s: float
    top_is_best: bool  # the halving sweep's best scored trial is planted at 0.85
    full_slot_s: float | None = None
    full_wall_s: float | None = None


def run_sweep(req: SweepRequest, plant: Path, epoch_s: float) -> tuple[dict, float]:
    os.environ["IMF_TRIAL_COMMAND"] = fake_command("--epoch-s", str(epoch_s), "--plant", str(plant))
    t0 = time.perf_counter()
    start_sweep(req, lambda line: None)
    wall = time.perf_counter() - t0
    return json.loads((Path(req.out) / str(req.name) / "sweep.json").read_text()), wall


def one(args: argparse.Namespace, folder: Path, index: int) -> Outcome:
    rng = random.Random((2000 if args.twin else 1000) + index)
    halved_req = request(args, folder, f"p{index}-h", True)
    _, state, _ = plan_sweep(halved_req)
    p = planting(rng, [t.id for t in state.trials], args)
    # the full sweep's ids differ only in the sweep name: the same draws under both names
    full_ids = {tid.replace(f"p{index}-h-", f"p{index}-f-", 1): r for tid, r in p.rollouts.items()}
    plant = folder / f"p{index}.json"
    plant.write_text(json.dumps({**p.rollouts, **full_ids}))
    halved, wall = run_sweep(halved_req, plant, args.epoch_s)
    trials = {t["id"]: t for t in halved["trials"]}
    stopped = {tid for tid, t in trials.items() if t["state"] == "stopped_early"}
    gaps = [BEST - p.means[tid] for tid in stopped]
    top = max((t for t in trials.values() if t["best_score"] is not None), key=lambda t: t["best_score"])
    out = Outcome(stopped=len(stopped), best_stopped=p.best in stopped,
                  twin_stopped=(p.twin in stopped) if p.twin else None,
                  tie_split=(p.tie[0] in stopped) != (p.tie[1] in stopped),
                  min_gap_stopped=min(gaps) if gaps else None,
                  slot_s=sum(t["elapsed_s"] or 0 for t in trials.values()),
                  epochs=sum(t["epoch"] for t in trials.values()), full_epochs=args.trials * args.epochs,
                  wall_s=wall, top_is_best=p.means[top["id"]] == BEST)
    if index < args.full:
        full, out.full_wall_s = run_sweep(request(args, folder, f"p{index}-f", False), plant, args.epoch_s)
        out.full_slot_s = sum(t["elapsed_s"] or 0 for t in full["trials"])
    return out


@dataclass
class NearOutcome:
    near: int  # near rivals planted
    stopped: set[str]  # by the real engine
    sim_stopped: set[str]  # by benchmarks/learning/halving_sim.py on the same scores
    best_or_twin: bool
    replayed: int  # engine decisions that judge() gives again from the scores it had then
    decisions: int
    slot_s: float
    sim_slot_s: float


def replay(halving: dict) -> int:
    """How many of the engine's decisions ``judge`` makes again from sweep.json's scores: the
    scores are kept in arrival order, and a decision saw the first ``compared`` of its rung."""
    scores = [RungScore(**s) for s in halving["scores"]]
    same = 0
    for d in halving["decisions"]:
        at_rung = [s for s in scores if s.rung == d["rung"]][: d["compared"]]
        mine = next(s for s in at_rung if s.trial == d["trial"])
        verdict = judge(mine, at_rung, halving["eta"])
        same += (verdict.outcome, verdict.cut) == (d["outcome"], d["cut"])
    return same


def one_near(args: argparse.Namespace, folder: Path, index: int) -> NearOutcome:
    """A near-rival planting (seed 3000 + index, as benchmarks/learning/halving_sim.py draws it) through
    the real engine, and through the simulation on the same scores."""
    from halving_sim import simulate

    rng = random.Random(3000 + index)
    req = request(args, folder, f"n{index}", True)
    _, state, _ = plan_sweep(req)
    p = near_planting(rng, [t.id for t in state.trials], args)
    plant = folder / f"n{index}.json"
    plant.write_text(json.dumps(p.rollouts))
    sim = simulate(state, p.rollouts, argparse.Namespace(**vars(args), start_s="0.3,0.6", poll=0.1), rng)
    done, _ = run_sweep(req, plant, args.epoch_s)
    stopped = {t["id"] for t in done["trials"] if t["state"] == "stopped_early"}
    return NearOutcome(len(p.near), stopped, sim.stopped, bool({p.best, p.twin} & stopped),
                       replay(done["halving"]), len(done["halving"]["decisions"]),
                       sum(t["elapsed_s"] or 0 for t in done["trials"]), sim.slot_s)


def near_section(args: argparse.Namespace, results: list[NearOutcome]) -> list[str]:
    n = len(results)
    same = sum(r.stopped == r.sim_stopped for r in results)
    lines = [NEAR_SECTION, "",
             f"{n} near-rival plantings (seeds 3000.., the first of benchmarks/learning/halving_sim.py's) of "
             f"{args.trials} stand-in trials on {args.slots} local:cpu slots through the real engine, "
             f"{args.epochs} epochs of {args.epoch_s:g} s, `--halving {args.eta} --rungs {args.rungs}`; "
             f"each also simulated on the same drawn scores; `python benchmarks/learning/halving.py --near "
             f"--plantings {n}`; {time.strftime('%Y-%m-%d')}, 2 cores shared with other work.", "",
             "| planting | near rivals | stopped (engine) | stopped (simulation) | same trials | best or twin "
             "stopped | decisions replayed | slot s (engine) | slot s (simulation) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(results):
        lines.append(f"| {i} | {r.near} | {len(r.stopped)} | {len(r.sim_stopped)} | "
                     f"{_yes(r.stopped == r.sim_stopped)} | {_yes(r.best_or_twin)} | {r.replayed}/{r.decisions} | "
                     f"{r.slot_s:.1f} | {r.sim_slot_s:.1f} |")
    lines += ["",
              f"- the engine stopped the same trials as the simulation in {same} of {n} plantings; "
              f"judge() gave {sum(r.replayed for r in results)} of {sum(r.decisions for r in results)} "
              "engine decisions again from the scores the engine had when it decided",
              f"- the best or its twin was stopped by the engine in {sum(r.best_or_twin for r in results)} of {n}"]
    return lines


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else "yes" if flag else "no"


def section(args: argparse.Namespace, results: list[Outcome]) -> list[str]:
    n = len(results)
    fulls = [r for r in results if r.full_slot_s is not None]
    full_slot = sum(r.full_slot_s for r in fulls) / len(fulls)
    full_wall = sum(r.full_wall_s for r in fulls) / len(fulls)
    slot, wall = sum(r.slot_s for r in results) / n, sum(r.wall_s for r in results) / n
    epochs, full_epochs = sum(r.epochs for r in results), sum(r.full_epochs for r in results)
    gaps = [r.min_gap_stopped for r in results if r.min_gap_stopped is not None]
    lines = [TWIN_SECTION if args.twin else SECTION, "",
             f"{n} plantings of {args.trials} stand-in trials on {args.slots} local:cpu slots, "
             f"{args.epochs} epochs of {args.epoch_s:g} s, rollouts of {args.episodes} episodes at "
             f"every 2nd epoch, `--halving {args.eta} --rungs {args.rungs}`; the full sweep (no "
             f"halving, same scores) measured on the first {len(fulls)}; planted curves as the "
             f"module docstring says{' (the best has a twin at 0.85)' if args.twin else ''}; "
             f"`python benchmarks/learning/halving.py{' --twin' if args.twin else ''}`; "
             f"{time.strftime('%Y-%m-%d')}, 2 cores shared with other work.", "",
             "| planting | stopped | best stopped | twin stopped | tie pair split | smallest true gap "
             "stopped | epochs run | slot s | wall s | top is a planted best |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(results):
        gap = "-" if r.min_gap_stopped is None else f"{r.min_gap_stopped:.3f}"
        lines.append(f"| {i} | {r.stopped} | {_yes(r.best_stopped)} | {_yes(r.twin_stopped)} | "
                     f"{_yes(r.tie_split)} | {gap} | {r.epochs}/{r.full_epochs} | {r.slot_s:.1f} | "
                     f"{r.wall_s:.1f} | {_yes(r.top_is_best)} |")
    twins = [r.twin_stopped for r in results if r.twin_stopped is not None]
    lines += ["",
              f"- the planted best was stopped in {sum(r.best_stopped for r in results)} of {n} plantings"
              + (f", its twin in {sum(twins)} of {n}" if twins else "")
              + f"; halving's top trial was planted at {BEST} in {sum(r.top_is_best for r in results)} of {n}",
              f"- the planted tie pair was split (one stopped, one kept) in {sum(r.tie_split for r in results)} of {n}",
              (f"- {sum(r.stopped for r in results)} of {n * args.trials} trials stopped; the smallest "
               f"true final gap to the best among them: {min(gaps):.3f}") if gaps else "- nothing stopped",
              f"- slot time per sweep: {slot:.1f} s with halving against {full_slot:.1f} s for the full "
              f"sweep, {100 * (1 - slot / full_slot):.0f}% saved; epochs run "
              f"{100 * (1 - epochs / full_epochs):.0f}% fewer; wall time {wall:.1f} s against {full_wall:.1f} s"]
    return lines


def run_near(args: argparse.Namespace) -> None:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.plantings):
            results.append(one_near(args, Path(tmp), i))
            r = results[-1]
            print(f"planting {i}: engine stopped {sorted(r.stopped)}, simulation {sorted(r.sim_stopped)}", flush=True)
    lines = near_section(args, results)
    print("\n".join(lines))
    if not args.no_write:
        write_section(lines[0], lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plantings", type=int, default=20)
    parser.add_argument("--twin", action="store_true", help="the best gets a planted twin (a tie at the top)")
    parser.add_argument("--near", action="store_true",
                        help="near-rival plantings, each also simulated (benchmarks/learning/halving_sim.py)")
    parser.add_argument("--full", type=int, default=3, help="plantings also run without halving")
    add_sweep_options(parser)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    args.full = max(1, min(args.full, args.plantings))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.near:
        run_near(args)
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.plantings):
            results.append(one(args, Path(tmp), i))
            r = results[-1]
            print(f"planting {i}: stopped {r.stopped}, best stopped {r.best_stopped}, "
                  f"twin stopped {r.twin_stopped}, slot {r.slot_s:.1f} s", flush=True)
    lines = section(args, results)
    print("\n".join(lines))
    if not args.no_write:
        write_section(lines[0], lines)


if __name__ == "__main__":
    main()
