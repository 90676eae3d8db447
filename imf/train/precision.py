"""Mixed precision of a training step: which autocast it runs under, from device and config.

The trial autocasts to bf16 on CUDA when ``training.bf16`` is on and the GPU supports it
(on a CPU bf16 is slower than float32, so it stays off there). ``autocast_for`` takes any
device, so tests and benchmarks run the same bf16 path on a CPU.
"""
from __future__ import annotations

import torch


def use_bf16(device: torch.device, requested: bool) -> bool:
    """The trial's choice: bf16 autocast on a bf16-capable CUDA device when the config asks."""
    return bool(requested) and device.type == "cuda" and torch.cuda.is_available() \
        and torch.cuda.is_bf16_supported()


def autocast_for(device: torch.device, enabled: bool) -> torch.autocast:
    """bf16 autocast on ``device`` (cuda or cpu), or a no-op context when not enabled."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)
