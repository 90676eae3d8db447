"""When to stop a trial before its last epoch: no progress, or a diverging loss."""
from __future__ import annotations

import math
from collections import deque


class EarlyStopper:
    """Stop after ``patience`` rollouts in a row without a new best score."""

    def __init__(self, patience: int | None) -> None:
        self.patience = patience
        self.best: float | None = None
        self.since_best = 0

    def update(self, score: float) -> bool:
        """Record a rollout score; return True when the trial should stop."""
        if self.best is None or score > self.best:
            self.best = score
            self.since_best = 0
        else:
            self.since_best += 1
        return self.patience is not None and self.since_best >= self.patience

    def state_dict(self) -> dict:
        return {"best": self.best, "since_best": self.since_best}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.since_best = state["best"], state["since_best"]


class DivergenceDetector:
    """A non-finite loss, or (after warm-up) a loss ``factor`` times its running median."""

    def __init__(self, factor: float, warmup_steps: int, window: int = 200) -> None:
        self.factor = factor
        self.warmup_steps = warmup_steps
        self.history: deque[float] = deque(maxlen=window)
        self.steps = 0
        self.reason: str | None = None

    def update(self, loss: float) -> bool:
        """Record one batch loss; return True (and set ``reason``) when it diverged."""
        self.steps += 1
        if not math.isfinite(loss):
            self.reason = f"non-finite loss {loss} at step {self.steps}"
            return True
        if self.steps > self.warmup_steps and len(self.history) >= 10:
            median = sorted(self.history)[len(self.history) // 2]
            if loss > self.factor * max(median, 1e-8):
                self.reason = (f"loss {loss:.4g} at step {self.steps} is over "
                               f"{self.factor:g}x its running median {median:.4g}")
                return True
        self.history.append(loss)
        return False

    def state_dict(self) -> dict:
        return {"history": list(self.history), "steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        self.history.clear()
        self.history.extend(state["history"])
        self.steps = state["steps"]
