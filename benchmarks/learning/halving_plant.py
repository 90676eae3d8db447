"""The planted sweeps of benchmarks/learning/halving.py and benchmarks/learning/halving_sim.py: the sweep request
and the drawn per-episode rollout scores of every trial (the rows tests/fake_trial.py --plant writes)."""
from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from imf.sweep import SweepRequest

BEST = 0.85


def add_sweep_options(parser: argparse.ArgumentParser) -> None:
    """The planted sweep's shape, shared by halving.py and halving_sim.py."""
    parser.add_argument("--trials", type=int, default=9)
    parser.add_argument("--slots", type=int, default=3)
    parser.add_argument("--eta", type=int, default=3)
    parser.add_argument("--rungs", default="2,4")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--epoch-s", type=float, default=0.3)
    parser.add_argument("--episodes", type=int, default=50)


def request(args: argparse.Namespace, out: Path, name: str, halving: bool) -> SweepRequest:
    seeds = ",".join(str(i) for i in range(1, args.trials + 1))
    return SweepRequest(config="smoke", grids=[f"seed={seeds}"], queues=["local:cpu"] * args.slots,
                        name=name, out=out, epochs=args.epochs, poll=0.1, stall_timeout=120.0,
                        halving=args.eta if halving else None, rungs=args.rungs if halving else None)


@dataclass
class Planting:
    means: dict[str, float]  # true final mean by trial id
    best: str
    twin: str | None
    tie: tuple[str, str]
    rollouts: dict[str, dict[str, list[float]]]  # trial id -> epoch -> per-episode scores
    near: dict[str, float] = field(default_factory=dict)  # near rival -> its gap in the best's SEs


def planting(rng: random.Random, ids: list[str], args: argparse.Namespace) -> Planting:
    picked = rng.sample(ids, 4)
    best, twin, tie = picked[0], picked[1] if args.twin else None, (picked[2], picked[3])
    means = {tid: rng.uniform(0.2, 0.75) for tid in ids}
    means[tie[1]] = means[tie[0]]
    means.update({tid: BEST for tid in (best, twin) if tid})
    rollouts: dict[str, dict[str, list[float]]] = {}
    for tid, m in means.items():
        rollouts[tid] = {}
        for epoch in range(2, args.epochs + 1, 2):
            mu = m * (0.4 + 0.6 * epoch / args.epochs)
            rollouts[tid][str(epoch)] = [round(rng.betavariate(2 * mu, 2 * (1 - mu)), 4)
                                         for _ in range(args.episodes)]
    return Planting(means, best, twin, tie, rollouts)


def best_mu(epoch: int, epochs: int) -> float:
    """The planted best's true mean score at ``epoch``."""
    return BEST * (0.4 + 0.6 * epoch / epochs)


def rollout_se(mu: float, episodes: int) -> float:
    """The standard error of one rollout's mean score: Beta(2 mu, 2 (1 - mu)) has variance mu (1 - mu) / 3."""
    return math.sqrt(mu * (1 - mu) / 3 / episodes)


def near_planting(rng: random.Random, ids: list[str], args: argparse.Namespace) -> Planting:
    """The best, its twin (the same curve) and 2..7 near rivals, each planted g SE below the best
    at every rollout (g uniform in [0.5, 1], SE the best's per-rollout standard error there);
    the others far below, as in ``planting``. ``Planting.near`` holds each near rival's g."""
    k = rng.randint(2, min(7, len(ids) - 2))
    picked = rng.sample(ids, 2 + k)
    best, twin, near = picked[0], picked[1], {tid: rng.uniform(0.5, 1.0) for tid in picked[2:]}
    curves: dict[str, dict[int, float]] = {}
    for tid in ids:
        m = rng.uniform(0.2, 0.75)
        curves[tid] = {e: m * (0.4 + 0.6 * e / args.epochs) for e in range(2, args.epochs + 1, 2)}
    for tid in (best, twin, *near):
        g = near.get(tid, 0.0)
        curves[tid] = {e: best_mu(e, args.epochs) - g * rollout_se(best_mu(e, args.epochs), args.episodes)
                       for e in range(2, args.epochs + 1, 2)}
    rollouts = {tid: {str(e): [round(rng.betavariate(2 * mu, 2 * (1 - mu)), 4) for _ in range(args.episodes)]
                      for e, mu in curve.items()} for tid, curve in curves.items()}
    means = {tid: curve[max(curve)] for tid, curve in curves.items()}
    return Planting(means, best, twin, (best, twin), rollouts, near)
