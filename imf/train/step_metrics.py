"""The training step's loss and metrics, kept on the device between log points.

A host read (``.item()``, ``.tolist()``, ``float(t)``) waits for every queued kernel: on a GPU,
one per step keeps the Python of the next step from overlapping the kernels of this one. The
loop hands each step's detached loss and metrics to ``StepMetrics.add``; every
``logging.every_steps`` steps and at the end of the epoch ``flush`` reads the whole window in
one sync (the per-step losses, in order, for the divergence check, and the metric sums).
"""
from __future__ import annotations

from typing import Any

import torch


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

    @property
    def pending(self) -> int:
        return len(self._losses)

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
