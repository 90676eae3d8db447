"""One epoch of the trial's own loop, timed: what the speed benchmarks that time a preset's training share."""
from __future__ import annotations

import argparse
import statistics
from typing import Any, Callable

from imf.train import TrainClock, train_epoch


def timed_epoch(cfg: Any, parts: Any, state: Any, steps: int, clock: Callable[[], float]) -> float:
    """Train ``steps`` steps through imf.train.train_epoch (loader, loss, backward, clip, AdamW,
    schedule, EMA) and return what ``clock`` (time.perf_counter or time.process_time) measured."""
    parts.steps_per_epoch, parts.clock = steps, TrainClock("wall", None)  # no budget: the epoch ends at steps
    if parts.early is not None:  # an early batch's epoch too
        parts.early.steps_per_epoch = steps
    start = clock()
    train_epoch(cfg, parts, state)
    state.epoch += 1
    return clock() - start


def interleaved_medians(runs: list[Callable[[int], float]], steps: int, rounds: int) -> list[float]:
    """Each callable's median over ``rounds`` rounds of ``steps`` steps, after a warm-up call each;
    the callables take turns round by round, the order reversed every other round, so load from
    other work on a shared machine hits each alike."""
    for run in runs:
        run(steps)  # warm-up: allocator, loader start
    times: list[list[float]] = [[] for _ in runs]
    order = list(range(len(runs)))
    for r in range(rounds):
        for i in (order if r % 2 == 0 else order[::-1]):
            times[i].append(runs[i](steps))
    return [statistics.median(t) for t in times]


def add_timing_arguments(parser: argparse.ArgumentParser) -> None:
    """--steps, --rounds, --no-write and --render, as every loop-timing benchmark takes them."""
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--render", action="store_true", help="only write the section from the JSON")
