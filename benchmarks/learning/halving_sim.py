"""Successive halving on near rivals, many plantings: the engine's own decisions on a simulated clock.

A planting through the real engine takes ~8 s of wall time on this machine, too slow for
hundreds. Here the sweep's queue loop is replayed on a simulated clock with the engine's own
parts: the plan of ``imf sweep`` (``plan_sweep``: queues and order), the trial state machine
(``TrialState.move``), the engine's work stealing (``Starter.steal_for``) and its halving
(``imf.sweep.halving.Halving``, fed each poll's new log lines as ``JobStatus.new_log``, as the
engine feeds it). Every poll (``--poll`` simulated seconds) walks the running trials in the
engine's order, then gives each free slot its next trial. A trial starts ``--start-s`` after
its launch (drawn uniformly from the range: the process start, which makes the arrival order at
a rung asynchronous) and writes one log row per ``--epoch-s``, with its planted rollouts (the
rows tests/fake_trial.py --plant writes). Slot time is the sum over trials of launch to end.

Plantings are benchmarks/learning/halving_plant.py's ``near_planting``: the best (true final 0.85), its twin
(the same curve) and 2..7 near rivals planted 0.5..1 SE below the best at every rollout; the
others far below. The same drawn scores also run without halving (the full sweep).

    python benchmarks/learning/halving_sim.py [--plantings 2000] [--rule bonferroni|uncorrected]
        [--trials 9] [--slots 3] [--eta 3] [--rungs 2,4] [--epochs 8] [--epoch-s 0.3]
        [--episodes 50] [--start-s 0.3,0.6] [--poll 0.1] [--no-write]

benchmarks/learning/halving.py --near runs plantings like these through the real engine and checks
that this simulation decides the same on the same scores.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from halving_plant import add_sweep_options, near_planting, request  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

from imf.scheduler import JobStatus  # noqa: E402
from imf.stats import Z95  # noqa: E402
from imf.sweep import halving as rule  # noqa: E402
from imf.sweep import ACTIVE, FINAL, SweepState, plan_sweep  # noqa: E402
from imf.sweep.starter import Starter  # noqa: E402

SECTION = "## Successive halving on near rivals, {rule} (benchmarks/learning/halving_sim.py{flag})"


@dataclass
class SimResult:
    stopped: set[str]
    decisions: list[tuple[str, int, str]]  # (trial, rung, outcome) in the order decided
    slot_s: float
    epochs: int


def log_row(epoch: int, episodes: list[float] | None) -> str:
    """The row tests/fake_trial.py --plant writes for ``epoch`` (counted from 1)."""
    row: dict = {"epoch": epoch - 1, "train_loss": 1.0 / epoch}
    if episodes:
        row["test_mean_score"] = sum(episodes) / len(episodes)
        row["test_per_seed"] = {str(100000 + i): v for i, v in enumerate(episodes)}
    return json.dumps(row) + "\n"


class SimulatedSweep:
    """The engine's queue loop (``Engine._step``) on a simulated clock; see the module docstring."""

    def __init__(self, state: SweepState, rollouts: dict[str, dict[str, list[float]]], epoch_s: float,
                 start_s: Callable[[], float], poll: float) -> None:
        self.state, self.rollouts, self.epoch_s, self.start_s, self.poll = state, rollouts, epoch_s, start_s, poll
        self.halving = rule.Halving(state)
        self.launched: dict[str, float] = {}
        self.begins: dict[str, float] = {}  # when the trial's first epoch starts
        self.ended: dict[str, float] = {}

    def log(self, line: str) -> None:  # Starter.steal_for notes its moves here
        pass

    def run(self) -> SimResult:
        now = 0.0
        while True:
            for trial in [t for t in self.state.trials if t.state in ("queued", "running")]:
                self._watch(trial, now)
            for queue in self.state.live_queues():
                if any(t.queue == queue.name and t.state in ACTIVE for t in self.state.trials):
                    continue
                pending = self.state.pending_on(queue.name)
                trial = pending[0] if pending else Starter.steal_for(self, queue)
                if trial is not None:
                    trial.queue = queue.name
                    trial.move("launch")
                    trial.move("started")
                    self.launched[trial.id], self.begins[trial.id] = now, now + self.start_s()
            if all(t.state in FINAL for t in self.state.trials):
                break
            now += self.poll
        hv = self.state.halving
        return SimResult({t.id for t in self.state.trials if t.state == "stopped_early"},
                         [(d.trial, d.rung, d.outcome) for d in hv.decisions] if hv else [],
                         sum(self.ended[t] - self.launched[t] for t in self.ended),
                         sum(t.epoch for t in self.state.trials))

    def _watch(self, trial, now: float) -> None:
        written = min(trial.epochs, max(0, math.floor((now - self.begins[trial.id]) / self.epoch_s)))
        planted = self.rollouts.get(trial.id, {})
        text = "".join(log_row(e, planted.get(str(e))) for e in range(trial.epoch + 1, written + 1))
        trial.epoch = written
        done = written == trial.epochs
        status = JobStatus("exited" if done else "running", 0 if done else None, new_log=text)
        if self.halving.verdict(trial, status) is not None:
            trial.move("ended", "stopped_early")
        elif done:
            trial.move("ended", "completed")
        else:
            return
        self.ended[trial.id] = now


def simulate(state: SweepState, rollouts: dict, args: argparse.Namespace, rng: random.Random) -> SimResult:
    low, high = (float(v) for v in args.start_s.split(","))
    sweep = SimulatedSweep(copy.deepcopy(state), rollouts, args.epoch_s, lambda: rng.uniform(low, high), args.poll)
    return sweep.run()


@dataclass
class Tally:
    plantings: int = 0
    best_or_twin: int = 0  # plantings where the best or its twin was stopped
    best: int = 0
    near: int = 0  # near rivals planted
    near_stopped: int = 0
    slot_s: float = 0.0
    full_slot_s: float = 0.0
    epochs: int = 0
    full_epochs: int = 0

    def add(self, plant, halved: SimResult, full: SimResult) -> None:
        self.plantings += 1
        self.best += plant.best in halved.stopped
        self.best_or_twin += bool({plant.best, plant.twin} & halved.stopped)
        self.near += len(plant.near)
        self.near_stopped += len(set(plant.near) & halved.stopped)
        self.slot_s += halved.slot_s
        self.full_slot_s += full.slot_s
        self.epochs += halved.epochs
        self.full_epochs += full.epochs

    def row(self, label: str) -> str:
        rate = self.best_or_twin / self.plantings
        return (f"| {label} | {self.plantings} | {self.best_or_twin} ({100 * rate:.1f}%) | {self.best} | "
                f"{self.near_stopped}/{self.near} | {100 * (1 - self.slot_s / self.full_slot_s):.0f}% | "
                f"{100 * (1 - self.epochs / self.full_epochs):.0f}% |")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson interval of a proportion k / n."""
    p, d = k / n, 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def measure(args: argparse.Namespace) -> tuple[Tally, dict[int, Tally]]:
    out = Path("/nonexistent-halving-sim")  # planned only: nothing is written
    _, halved_state, _ = plan_sweep(request(args, out, "sim", True))
    _, full_state, _ = plan_sweep(request(args, out, "sim", False))
    ids = [t.id for t in halved_state.trials]
    total, by_k = Tally(), {}
    for i in range(args.plantings):
        rng = random.Random(3000 + i)
        plant = near_planting(rng, ids, args)
        halved = simulate(halved_state, plant.rollouts, args, rng)
        full = simulate(full_state, plant.rollouts, args, rng)
        for tally in (total, by_k.setdefault(len(plant.near), Tally())):
            tally.add(plant, halved, full)
    return total, by_k


def section(args: argparse.Namespace, total: Tally, by_k: dict[int, Tally], heading: str) -> list[str]:
    low, high = wilson(total.best_or_twin, total.plantings)
    return [heading, "",
            f"{total.plantings} near-rival plantings (seeds 3000..) of {args.trials} trials on "
            f"{args.slots} slots, {args.epochs} epochs of {args.epoch_s:g} s (simulated), trial start "
            f"{args.start_s.replace(',', '..')} s, rollouts of {args.episodes} episodes at every 2nd "
            f"epoch, `--halving {args.eta} --rungs {args.rungs}`; the module docstring says what is "
            f"planted and simulated; `python benchmarks/learning/halving_sim.py --rule {args.rule}`; "
            f"{time.strftime('%Y-%m-%d')}.", "",
            "| near rivals | plantings | best or twin stopped | best stopped | near rivals stopped "
            "| slot time saved | epochs saved |", "|---|---|---|---|---|---|---|",
            *[by_k[k].row(str(k)) for k in sorted(by_k)], total.row("all"), "",
            f"- the best or its twin was stopped in {total.best_or_twin} of {total.plantings} plantings "
            f"({100 * total.best_or_twin / total.plantings:.1f}%, 95% interval {100 * low:.1f}-{100 * high:.1f}%); "
            f"the best itself in {total.best}",
            f"- slot time {total.slot_s / total.plantings:.1f} s per sweep with halving against "
            f"{total.full_slot_s / total.plantings:.1f} s for the full sweep on the same scores: "
            f"{100 * (1 - total.slot_s / total.full_slot_s):.0f}% saved"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plantings", type=int, default=2000)
    parser.add_argument("--rule", choices=("bonferroni", "uncorrected"), default="bonferroni",
                        help="the engine's rule, or the 1.96-SE rule it replaced (for comparison)")
    add_sweep_options(parser)
    parser.add_argument("--start-s", default="0.3,0.6", help="a trial's start after its launch: LOW,HIGH s")
    parser.add_argument("--poll", type=float, default=0.1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.rule == "uncorrected":  # one 1.96-SE test per comparison, the rule before the correction
        rule.stop_z = lambda below: Z95
    total, by_k = measure(args)
    names = {"bonferroni": "the engine's rule", "uncorrected": "the uncorrected 1.96-SE rule"}
    flag = "" if args.rule == "bonferroni" else f" --rule {args.rule}"
    lines = section(args, total, by_k, SECTION.format(rule=names[args.rule], flag=flag))
    print("\n".join(lines))
    if not args.no_write:
        write_section(lines[0], lines)


if __name__ == "__main__":
    main()
