"""When to stop a trial before its last epoch: no progress, or a diverging loss.

Also the window of step metrics kept on the device between log points (``StepMetrics``: one
host sync every logging.every_steps steps, since on a GPU a read per step would keep the next
step's Python from overlapping this step's kernels), and SIGTERM/SIGINT, which end a trial at
its next safe point (``StopSignals``: the run ends "interrupted" with its last complete
checkpoint; a second SIGINT stops at once; installed whatever the inherited disposition).
"""
from __future__ import annotations

import math
import signal
import threading
from collections import deque
from types import FrameType
from typing import Any

import torch




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


class StepMetrics:
    def __init__(self, every: int) -> None:
        self.every = max(1, int(every))
        self._losses: list[torch.Tensor] = []
        self._sums: dict[str, torch.Tensor | float] = {}
        self.sums: dict[str, float] = {}  # host sums of the flushed steps
        self.losses: list[float] = []  # host per-step losses of the flushed steps

    def add(self, loss: torch.Tensor, metrics: dict[str, Any]) -> bool:
        """Record one step (no host sync); True when a flush is due."""
        self._losses.append(loss.detach().reshape(()))
        for key, value in metrics.items():
            if isinstance(value, torch.Tensor):  # float64 sums: the same as summing host floats
                value = value.detach().reshape(()).double()
            old = self._sums.get(key)
            self._sums[key] = value if old is None else old + value
        return len(self._losses) >= self.every

    def flush(self) -> list[float]:
        """The window's per-step losses (host floats, in step order); its sums join ``sums``."""
        if not self._losses:
            return []
        keys = [k for k, v in self._sums.items() if isinstance(v, torch.Tensor)]
        device = self._losses[0].device
        stacked = torch.cat([torch.stack(self._losses).double(),
                             torch.stack([self._sums[k] for k in keys]).to(device)]) if keys \
            else torch.stack(self._losses).double()
        values = stacked.tolist()  # the one sync of the window
        window, sums = values[: len(self._losses)], dict(zip(keys, values[len(self._losses):]))
        for key, value in self._sums.items():
            value = sums.get(key, value)
            self.sums[key] = self.sums.get(key, 0.0) + float(value)
        self.losses += window
        self._losses, self._sums = [], {}
        return window


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """Context manager: ``received`` is the first stop signal's name ("SIGTERM"), or None."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def __call__(self) -> bool:
        return self.received is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # asked twice: stop now
        if self.received is None:  # the loop says so when it stops (no printing in a handler)
            self.received, self.signum = signal.Signals(signum).name, signum
