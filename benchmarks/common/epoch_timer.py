"""One epoch of the trial's own loop, timed: what the speed benchmarks that time a preset's training share."""
from __future__ import annotations

from typing import Any, Callable

from imf.train import TrainClock, train_epoch


def timed_epoch(cfg: Any, parts: Any, state: Any, steps: int, clock: Callable[[], float]) -> float:
    """Train ``steps`` steps through imf.train.train_epoch (loader, loss, backward, clip, AdamW,
    schedule, EMA) and return what ``clock`` (time.perf_counter or time.process_time) measured."""
    parts.steps_per_epoch, parts.clock = steps, TrainClock("wall", None)  # no budget: the epoch ends at steps
    start = clock()
    train_epoch(cfg, parts, state)
    state.epoch += 1
    return clock() - start
