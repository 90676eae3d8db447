"""Exponential moving average of the weights, with the warm-up decay of Diffusion Policy:

    decay(step) = clamp(1 - (1 + step / inv_gamma) ** -power, min_value, max_value)

so early averages follow the model closely (power 0.75 reaches 0.999 after ~10k steps)
and the decay never exceeds max_value (0.9999).
"""
from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn as nn

from imf.errors import CheckpointError


class EMAModel:
    def __init__(self, model: nn.Module, power: float = 0.75, max_value: float = 0.9999,
                 inv_gamma: float = 1.0, min_value: float = 0.0, update_after_step: int = 0) -> None:
        self.averaged_model = copy.deepcopy(model).eval()
        self.averaged_model.requires_grad_(False)
        self.power, self.max_value, self.min_value = power, max_value, min_value
        self.inv_gamma, self.update_after_step = inv_gamma, update_after_step
        self.optimization_step = 0
        self.decay = 0.0

    def get_decay(self, step: int) -> float:
        step = max(0, step - self.update_after_step - 1)
        if step <= 0:
            return 0.0
        value = 1.0 - (1.0 + step / self.inv_gamma) ** -self.power
        return max(self.min_value, min(value, self.max_value))

    @torch.no_grad()
    def step(self, model: nn.Module) -> None:
        """Fold the current weights of ``model`` into the average."""
        self.decay = self.get_decay(self.optimization_step)
        avg_params = dict(self.averaged_model.named_parameters())
        averaged, current = [], []
        for name, param in model.named_parameters():
            avg = avg_params[name]
            if param.requires_grad and avg.dtype.is_floating_point:
                averaged.append(avg)
                current.append(param.detach().to(avg.dtype))
            else:  # frozen weights are copied, never averaged
                avg.copy_(param.detach())
        if averaged:  # two multi-tensor kernels instead of two per parameter
            torch._foreach_mul_(averaged, self.decay)
            torch._foreach_add_(averaged, current, alpha=1.0 - self.decay)
        avg_buffers = dict(self.averaged_model.named_buffers())
        for name, buf in model.named_buffers():
            if name in avg_buffers:
                avg_buffers[name].copy_(buf)
        self.optimization_step += 1

    def counters(self) -> dict[str, Any]:
        """The state besides the averaged weights (a checkpoint stores those once, as ``ema``)."""
        return {"optimization_step": self.optimization_step, "decay": self.decay,
                "power": self.power, "max_value": self.max_value, "inv_gamma": self.inv_gamma}

    def state_dict(self) -> dict[str, Any]:
        return {"averaged_model": self.averaged_model.state_dict(), **self.counters()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        try:
            self.averaged_model.load_state_dict(state["averaged_model"])
            self.optimization_step = int(state["optimization_step"])
            self.decay = float(state.get("decay", 0.0))
        except (KeyError, RuntimeError, TypeError) as exc:
            raise CheckpointError(f"EMA state cannot be loaded: {str(exc).splitlines()[0]}") from None
