"""What objectives (plugin group ``imf.objectives``) share; their contract is ``imf.contracts.Objective``.

An objective is built as ``cls(cfg: ObjectiveConfig, options)`` and gives
- ``loss(model, actions (B,H,A), cond (B,n_obs,F), generator=None) -> (loss, metrics)``,
- ``sample(model, cond, n_steps=None, generator=None) -> (B,H,A)`` normalised actions.
``options`` is an instance of the class's ``Options`` dataclass (its own knobs, from
``objective.options``; see imf/registry/options.py), or None for a class without one.

``model`` is a noise-prediction network called as ``model(z, t, h, cond)`` with
z (B,H,A), times t and h = t - r of shape (B,), and condition features (B,n_obs,F); it
exposes ``horizon`` and ``action_dim`` (see ``imf.model.ImfTransformer``). Flow conventions
(shared/spec/IMF.md): t = 0 is data, t = 1 is noise, z_t = (1 - t) x + t e, v = e - x.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from imf.contracts import Objective  # noqa: F401  (the group's contract, imf/contracts.py, named here too)
from imf.errors import ConfigError, OptionError

Metrics = dict[str, "torch.Tensor | float"]  # 0-dim tensors on the device, or host floats


@dataclass
class TimeOptions:
    """Logit-normal times, t = sigmoid(N(time_mu, time_sigma^2)) (shared/spec/IMF.md)."""
    time_mu: float = -0.4
    time_sigma: float = 1.0

    def __post_init__(self) -> None:
        if not self.time_sigma > 0:
            raise OptionError("time_sigma", f"must be > 0, got {self.time_sigma}")


@dataclass
class MeanFlowOptions(TimeOptions):
    equal_time_ratio: float = 0.5  # fraction of the batch with r = t
    adaptive_p: float = 1.0  # adaptive weight w = 1 / (err^2 + c)^p
    adaptive_c: float = 0.01

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.equal_time_ratio <= 1.0:
            raise OptionError("equal_time_ratio", f"must be in [0, 1], got {self.equal_time_ratio}")
        if self.adaptive_c <= 0 and self.adaptive_p != 0:
            raise OptionError("adaptive_c", f"must be > 0 (or adaptive_p = 0), got {self.adaptive_c}")


class ObjectiveBase:
    """What every built-in objective shares: its config and options, no v-head unless it says so."""

    name = "base"
    uses_v_head = False
    Options: type | None = None

    def __init__(self, cfg, options: Any = None) -> None:
        self.cfg = cfg
        self.opts = options if options is not None or self.Options is None else self.Options()


def interpolate(x: torch.Tensor, e: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """z_t = (1 - t) x + t e: data at t = 0, noise at t = 1."""
    return (1 - expand(t)) * x + expand(t) * e  # (B, H, A)


def randn(shape, like: torch.Tensor, generator: torch.Generator | None,
          dtype: torch.dtype | None = None) -> torch.Tensor:
    return torch.randn(shape, generator=generator, device=like.device, dtype=dtype or like.dtype)


def logit_normal(n: int, mu: float, sigma: float, like: torch.Tensor,
                 generator: torch.Generator | None) -> torch.Tensor:
    """(n,) times sigmoid(N(mu, sigma^2)): mass in the middle, none exactly at 0 or 1."""
    return torch.sigmoid(randn((n,), like, generator) * sigma + mu)


def sample_t_r(n: int, opts: MeanFlowOptions, like: torch.Tensor, generator: torch.Generator | None
               ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """t = max and r = min of two logit-normal draws; the first n_eq rows get r = t.

    A fixed count (round(ratio * n)) instead of a coin per row keeps the r = t rows as one
    contiguous block, so only the r < t block pays for the JVP.
    """
    t, r = draw_t_r(n, opts, like, generator)  # (n,) each
    n_eq = int(round(opts.equal_time_ratio * n))
    r = torch.cat([t[:n_eq], r[n_eq:]])
    return t, r, n_eq


def draw_t_r(n: int, opts: TimeOptions, like: torch.Tensor, generator: torch.Generator | None
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """(t, r), each (n,): the max and min of two logit-normal draws, no row set to r = t yet."""
    a = logit_normal(n, opts.time_mu, opts.time_sigma, like, generator)
    b = logit_normal(n, opts.time_mu, opts.time_sigma, like, generator)
    return torch.maximum(a, b), torch.minimum(a, b)


def draw_mean_flow_batch(x: torch.Tensor, opts: MeanFlowOptions, generator: torch.Generator | None
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """(z_t, v = e - x, t, r, n_eq) for the average-velocity objectives (imf, meanflow).

    The draws come in a fixed order (the noise e, then the two times), so a seeded generator
    gives the same batch whichever objective asks.
    """
    e = randn(x.shape, x, generator)
    t, r, n_eq = sample_t_r(x.shape[0], opts, x, generator)
    return interpolate(x, e, t), e - x, t, r, n_eq  # z, v (B, H, A); t, r (B,)


def draw_paired_batch(x: torch.Tensor, opts: MeanFlowOptions, generator: torch.Generator | None
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """(z_t, v, t, r, n_eq) as ``draw_mean_flow_batch``, but each r < t row a copy of an r = t row
    (iMF's ``tangent=shared``): row n_eq + j has the x, e and t of row j, and r < t.

    Why: the tangent of an r < t row is u(z_t, t, t), which is exactly what the r = t block's
    forward computes for its row j. With the rows paired, that forward (detached) is the
    tangent, and the extra no-grad forward of the boundary tangent is gone. The price: the
    batch holds n_eq distinct (x, e, t) draws, not B; rows n_eq.. of ``x`` go unused
    (the caller gathers its condition with ``paired_rows(cond, n_eq)``).

    n_eq = max(round(ratio * B), ceil(B / 2)), so every r < t row has a partner (``ImfOptions``
    refuses ratios under 0.5 with this tangent; the ceil only moves one row of an odd batch at
    0.5). The generator is advanced exactly as by ``draw_mean_flow_batch`` (e, then two times,
    for all B rows), so whatever draws next sees the same state whichever tangent drew.
    """
    n = x.shape[0]
    e = randn(x.shape, x, generator)  # (B, H, A)
    t, r = draw_t_r(n, opts, x, generator)  # (B,) each
    n_eq = max(int(round(opts.equal_time_ratio * n)), (n + 1) // 2)
    x, e, t = (paired_rows(y, n_eq) for y in (x, e, t))
    r = torch.cat([t[:n_eq], r[: n - n_eq]])  # r = t on the first n_eq rows, the draw's min after
    return interpolate(x, e, t), e - x, t, r, n_eq  # z, v (B, H, A); t, r (B,)


def paired_rows(y: torch.Tensor, n_eq: int) -> torch.Tensor:
    """Rows [0, n_eq) then [0, B - n_eq) of y: the batch layout of ``draw_paired_batch``."""
    return torch.cat([y[:n_eq], y[: y.shape[0] - n_eq]])


def to_metrics(stats: dict[str, torch.Tensor]) -> Metrics:
    """The scalar tensors, detached and left on the device: the training loop reads them in
    one sync every ``logging.every_steps`` steps (imf/train/stopping.py)."""
    return {key: value.detach() for key, value in stats.items()}


def expand(x: torch.Tensor) -> torch.Tensor:
    """(B,) -> (B, 1, 1) to broadcast over (B, H, A)."""
    return x[:, None, None]


def adaptive_loss(err: torch.Tensor, p: float, c: float) -> torch.Tensor:
    """MeanFlow's adaptive weight on the per-sample summed squared error (B, H, A):
    mean_b sg(w_b) * ||err_b||^2 with w_b = 1 / (||err_b||^2 + c)^p."""
    sq = err.pow(2).flatten(1).sum(dim=1)  # (B,)
    weight = (sq.detach() + c).pow(-p)
    return (weight * sq).mean()


def jvp(model, primals: tuple, tangents: tuple, cond: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(u, du) = (model(z, t, h, cond), its derivative along the tangents) in float32.

    ``model.jvp`` writes the derivative out in plain ops (imf/model/tangent.py): no dual
    tensors, so it runs under torch.compile, and du carries no graph (the objectives use it
    stop-gradiented) while u keeps its graph to the weights and to ``cond`` (the encoder
    features, which carry no tangent). Autocast is off inside: the tangent is multiplied by
    (t - r) and bf16 is too coarse for it; gradients still flow back through the casts
    (float64 stays float64: the equality checks run in it).
    """
    with torch.autocast(device_type=primals[0].device.type, enabled=False):
        return model.jvp(*map(at_least_fp32, primals), at_least_fp32(cond), *map(at_least_fp32, tangents))


def jvp_v_head(model, primals: tuple, time_tangents: tuple, cond: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(u, v, du) as ``jvp``, the z tangent being the model's own v-head output v (stop-
    gradiented): one value pass gives u and v with their graphs, and du from its tape
    (``model.jvp_v_head``). ``time_tangents``: (dt, dh). At least float32 and autocast off,
    as ``jvp``: under bf16 autocast this block's u and v come out in float32."""
    with torch.autocast(device_type=primals[0].device.type, enabled=False):
        return model.jvp_v_head(*map(at_least_fp32, primals), at_least_fp32(cond),
                                *map(at_least_fp32, time_tangents))


def at_least_fp32(x: torch.Tensor) -> torch.Tensor:
    """At least float32: bf16 up to float32, float64 kept (a float64 check stays float64)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def euler_sampler(model, cond: torch.Tensor, n_steps: int, generator: torch.Generator | None,
                  average: bool = True, noise_scale: float = 1.0) -> torch.Tensor:
    """z_r = z_t - (t - r) model(z_t, t, h) on a uniform grid from 1 to 0, starting from noise.

    ``average``: the model is an average velocity u(z_t, r, t), h = t - r (1 step:
    x = e - u(e, 0, 1)); otherwise an instantaneous velocity, h = 0 (Euler integration).
    ``noise_scale``: the starting noise's standard deviation (objective.noise_scale).
    The state stays in float32 under autocast (see ``state_dtype``).
    """
    b, dtype = cond.shape[0], state_dtype(cond)
    z = noise_scale * randn((b, model.horizon, model.action_dim), cond, generator, dtype)  # (B, H, A)
    grid = torch.linspace(1.0, 0.0, n_steps + 1, device=cond.device, dtype=dtype)
    zero = torch.zeros(b, device=cond.device, dtype=dtype)
    for i in range(n_steps):
        t, r = grid[i].expand(b), grid[i + 1].expand(b)
        h = t - r
        z = z - expand(h) * model(z, t, h if average else zero, cond).to(dtype)
    return z


def state_dtype(cond: torch.Tensor) -> torch.dtype:
    """The sampler's noise and state dtype: at least float32. Under bf16 autocast ``cond`` is
    bf16; noise drawn in it would differ from the float32 draw of the same seed, and many
    small steps would round away."""
    return torch.promote_types(cond.dtype, torch.float32)


def check_steps(n_steps: Any, default: int) -> int:
    n = default if n_steps is None else n_steps
    if not isinstance(n, int) or n < 1:
        raise ConfigError(f"sampling steps (objective.sample_steps): expected a positive integer, got {n!r}")
    return n
