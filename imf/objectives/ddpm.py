"""The Diffusion Policy baseline: DDPM with epsilon prediction, 100 training and 100
inference steps, the squaredcos_cap_v2 (cosine) beta schedule, and x0 clipped to [-1, 1]
(actions are min-max normalised to that range).

The network sees the discrete step k as t = k / N, so it shares the time embedding of the
flow objectives (t * policy.time_scale; time_scale = 100 embeds k itself, as Diffusion Policy
does); h is always 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from imf.errors import ConfigError, OptionError
from imf.objectives.base import ObjectiveBase, check_steps, expand, randn, state_dtype


def make_betas(schedule: str, n: int) -> torch.Tensor:
    if schedule == "squaredcos_cap_v2":
        def alpha_bar(s: float) -> float:
            return math.cos((s + 0.008) / 1.008 * math.pi / 2) ** 2
        return torch.tensor([min(1 - alpha_bar((i + 1) / n) / alpha_bar(i / n), 0.999)
                             for i in range(n)], dtype=torch.float64)
    if schedule == "linear":
        return torch.linspace(1e-4, 0.02, n, dtype=torch.float64)
    raise ValueError(f"unknown beta schedule {schedule!r}")


BETA_SCHEDULES = ("squaredcos_cap_v2", "linear")


@dataclass
class DdpmOptions:
    steps: int = 100  # training steps; also the inference steps unless a call asks fewer
    beta_schedule: str = "squaredcos_cap_v2"
    clip_sample: bool = True  # x0 clipped to [-1, 1], the normalised action range

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise OptionError("steps", f"must be >= 1, got {self.steps}")
        if self.beta_schedule not in BETA_SCHEDULES:
            raise OptionError("beta_schedule", f"got {self.beta_schedule!r}, allowed: {', '.join(BETA_SCHEDULES)}")


class DdpmObjective(ObjectiveBase):
    name = "ddpm"
    Options = DdpmOptions

    def __init__(self, cfg, options: DdpmOptions | None = None) -> None:
        super().__init__(cfg, options)
        self.check_config(cfg)
        self.n_train = self.opts.steps
        self.alpha_bar = torch.cumprod(1 - make_betas(self.opts.beta_schedule, self.n_train), 0)
        self._abar_on: dict[tuple, torch.Tensor] = {}  # alpha_bar per (device, dtype), made once

    @classmethod
    def check_config(cls, cfg) -> None:
        """The objective section's core keys ddpm cannot honour, refused before a run starts."""
        if cfg.noise_scale != 1.0:  # its ancestral steps add unit noise of their own at every step
            raise ConfigError(f"config key 'objective.noise_scale': got {cfg.noise_scale!r}, but ddpm "
                              f"samples from unit noise only (1); the flow-type objectives take other scales")

    def _abar(self, k: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        key = (like.device, like.dtype)
        if key not in self._abar_on:
            self._abar_on[key] = self.alpha_bar.to(like.device).to(like.dtype)
        return self._abar_on[key][k]

    def loss(self, model, actions: torch.Tensor, cond: torch.Tensor,
             generator: torch.Generator | None = None):
        x = actions
        eps = randn(x.shape, x, generator)
        k = torch.randint(0, self.n_train, (x.shape[0],), generator=generator, device=x.device)
        abar = expand(self._abar(k, x))
        noisy = abar.sqrt() * x + (1 - abar).sqrt() * eps  # (B, H, A)
        t = k.to(x.dtype) / self.n_train
        loss = F.mse_loss(model(noisy, t, torch.zeros_like(t), cond), eps)
        value = loss.detach()  # read by the loop at its log points, not here (no sync)
        return loss, {"loss": value, "mse": value}

    def sample(self, model, cond: torch.Tensor, n_steps: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
        n = min(check_steps(n_steps, self.opts.steps), self.n_train)
        stride = self.n_train // n
        b, dtype = cond.shape[0], state_dtype(cond)
        x = randn((b, model.horizon, model.action_dim), cond, generator, dtype)
        zero = torch.zeros(b, device=cond.device, dtype=dtype)
        for k in reversed(range(0, n * stride, stride)):  # exactly n steps, the last at k = 0
            eps = model(x, zero + k / self.n_train, zero, cond).to(dtype)
            x = self._step(x, eps, k, k - stride, generator)
        return x

    def _step(self, x, eps, k: int, k_prev: int, generator) -> torch.Tensor:
        """One ancestral step k -> k_prev with the 'fixed small' posterior variance."""
        abar = float(self.alpha_bar[k])
        abar_prev = float(self.alpha_bar[k_prev]) if k_prev >= 0 else 1.0
        alpha = abar / abar_prev
        beta = 1 - alpha
        x0 = (x - math.sqrt(1 - abar) * eps) / math.sqrt(abar)
        if self.opts.clip_sample:
            x0 = x0.clamp(-1.0, 1.0)
        mean = (math.sqrt(abar_prev) * beta / (1 - abar)) * x0 \
            + (math.sqrt(alpha) * (1 - abar_prev) / (1 - abar)) * x
        if k_prev < 0:
            return mean
        var = max((1 - abar_prev) / (1 - abar) * beta, 1e-20)
        return mean + math.sqrt(var) * randn(x.shape, x, generator)
