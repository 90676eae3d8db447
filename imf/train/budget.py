"""A training-time budget (seconds spent in training steps, not validation or rollouts) and
the learning-rate schedule that can decay over it.

The "wall" clock is what a user waiting for a result cares about. The "cpu" clock counts the
process's CPU seconds divided by torch's thread count, which equals the wall clock on an idle
machine and stays the same on a loaded one, so benchmarks on shared machines compare fairly.
"""
from __future__ import annotations

import math
import time

import torch

from imf.errors import ConfigError

CLOCKS = ("wall", "cpu")


class TrainClock:
    def __init__(self, kind: str = "wall", budget_s: float | None = None, spent_s: float = 0.0) -> None:
        if kind not in CLOCKS:
            raise ConfigError(f"config key 'training.budget_clock': got {kind!r}, allowed: {', '.join(CLOCKS)}")
        self.kind, self.budget_s, self.spent_s = kind, budget_s, spent_s
        self._started: float | None = None

    def _now(self) -> float:
        if self.kind == "cpu":
            return time.process_time() / max(1, torch.get_num_threads())
        return time.perf_counter()

    def start(self) -> None:
        self._started = self._now()

    def stop(self) -> None:
        if self._started is not None:
            self.spent_s += self._now() - self._started
            self._started = None

    def seconds(self) -> float:
        """Training seconds so far, the running stretch included."""
        running = self._now() - self._started if self._started is not None else 0.0
        return self.spent_s + running

    def progress(self) -> float:
        """Fraction of the budget used (0 without a budget)."""
        return min(1.0, self.seconds() / self.budget_s) if self.budget_s else 0.0

    def exhausted(self) -> bool:
        return bool(self.budget_s) and self.seconds() >= self.budget_s


def lr_factor(schedule: str, warmup: int, total: int, clock: TrainClock | None = None):
    """Linear warm-up over ``warmup`` steps, then either the full rate (constant) or a cosine to
    0 at step ``total`` or, with a time budget on ``clock``, at the end of the budget (whichever
    comes first)."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        if schedule == "constant":
            return 1.0
        progress = (step - warmup) / max(1, total - warmup)
        if clock is not None and clock.budget_s:
            progress = max(progress, clock.progress())
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return factor
