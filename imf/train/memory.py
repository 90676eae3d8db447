"""Out of GPU memory as a named outcome: which batch did not fit, the peak, and what to run.

A trial whose step (or rollout) raises torch.cuda.OutOfMemoryError, or the "CUDA out of
memory" RuntimeError of older torch, ends ``failed`` with a GpuOutOfMemoryError: its reason
names the micro-batch on the GPU, the peak memory torch allocated and the card's memory, and
the ``training.grad_accum`` that halves the micro-batch (the same windows per optimizer step);
its exit code tells a sweep to retry it once on a GPU with more free memory.
"""
from __future__ import annotations

import torch

from imf.config import Config
from imf.errors import GpuOutOfMemoryError


def is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "CUDA out of memory" in str(exc)


def gpu_memory_gib(device: torch.device) -> tuple[float, float] | None:
    """(peak allocated, total) GiB of ``device``, or None off CUDA."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    peak = torch.cuda.max_memory_allocated(device) / 2**30
    return peak, torch.cuda.get_device_properties(device).total_memory / 2**30


def out_of_memory_error(cfg: Config, device: torch.device) -> GpuOutOfMemoryError:
    t = cfg.training
    micro = t.batch_size // t.grad_accum
    measured = gpu_memory_gib(device)
    peak = (f"peak {measured[0]:.1f} GiB of {measured[1]:.1f} GiB" if measured
            else "peak not measured: not on a CUDA device")
    return GpuOutOfMemoryError(f"out of GPU memory at batch {micro} ({peak}); {_instead(t.batch_size, t.grad_accum)}")


def _instead(batch_size: int, grad_accum: int) -> str:
    """The smallest grad_accum above the current one that divides the batch (micro-batches at
    most half the size), or a bigger card when a micro-batch is one window already."""
    more = next((k for k in range(2 * grad_accum, batch_size + 1) if batch_size % k == 0), None)
    if more is None:
        return "it cannot be split: run it on a bigger card"
    return (f"instead run training.grad_accum={more} (micro-batches of {batch_size // more}, the same "
            f"{batch_size} windows per step), or on a bigger card")
