"""One training step's gradients, in ``training.grad_accum`` micro-batches, and moving a batch
to the device.

With grad_accum K the loader's batch of ``batch_size`` windows is cut into K micro-batches of
batch_size / K, each forward and backward on its own (so the GPU holds the activations of one
micro-batch), its loss weighted by its share of the batch: the gradients add up to those of the
whole batch, and the optimizer, the EMA, the learning-rate schedule and the logged steps see
one step, as without accumulation. Objectives whose losses are means over the batch (all the
built-in ones) give the full-batch gradient for the same draws of noise and times.
"""
from __future__ import annotations

from typing import Any

import torch

from imf.errors import TrainingError
from imf.objectives import Metrics
from imf.train.parts import autocast_for


def batch_size_of(batch: Any) -> int:
    if isinstance(batch, dict):
        return batch_size_of(next(iter(batch.values())))
    return int(batch.shape[0])


def rows(batch: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of every tensor of a (nested) batch: views, no copies."""
    if isinstance(batch, dict):
        return {k: rows(v, start, stop) for k, v in batch.items()}
    return batch[start:stop]


def micro_batches(batch: Any, k: int) -> list[tuple[Any, float]]:
    """``batch`` cut into at most ``k`` parts of near-equal size (a short last batch of an
    epoch too), each with its share of the rows."""
    n = batch_size_of(batch)
    if k <= 1:
        return [(batch, 1.0)]
    bounds = [n * i // k for i in range(k + 1)]
    return [(rows(batch, a, b), (b - a) / n) for a, b in zip(bounds, bounds[1:]) if b > a]


def accumulate_gradients(policy: Any, batch: Any, k: int, device: torch.device,
                         autocast: bool) -> tuple[torch.Tensor, Metrics]:
    """Backward of the batch's loss in ``k`` micro-batches (gradients add into ``.grad``);
    the batch's loss and metrics, detached, as weighted means over the micro-batches."""
    loss_sum: torch.Tensor | None = None
    sums: dict[str, Any] = {}
    for part, share in micro_batches(batch, k):
        with autocast_for(device, autocast):
            loss, metrics = policy.compute_loss(part)
        (loss * share if share != 1.0 else loss).backward()
        loss_sum = loss.detach() * share if loss_sum is None else loss_sum + loss.detach() * share
        for key, value in metrics.items():
            value = value.detach() if isinstance(value, torch.Tensor) else value
            sums[key] = value * share if key not in sums else sums[key] + value * share
    if loss_sum is None:
        raise TrainingError("a training batch without rows")
    return loss_sum, sums


def to_device(batch: Any, device: torch.device) -> Any:
    """The batch on ``device``; the copy is non-blocking only to a CUDA device (the loader pins
    its batches for one): elsewhere it would be an ordinary copy anyway."""
    non_blocking = device.type == "cuda"
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    return batch.to(device, non_blocking=non_blocking)
