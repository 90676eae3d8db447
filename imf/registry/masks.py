"""What an ``imf.masks`` plugin must return, checked with numpy alone.

The transformer (imf/model/transformer.py) resolves its masks here, and so does the sweep's
dry run, which has no torch: one check for both. A mask is called with the token counts
(horizon action tokens; ``N_TIME_TOKENS`` time tokens then n_obs_steps observation tokens as
the condition) and must return an object with ``self_attn`` (horizon x horizon) and
``cross_attn`` (horizon x condition tokens), each a boolean array or None (attend everywhere),
with no row that attends to nothing (softmax over nothing is NaN).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from imf import registry
from imf.errors import ConfigError
from imf.registry.options import resolve as resolve_options

N_TIME_TOKENS = 2  # the condition's first tokens: t and h = t - r
_WHAT = {"self_attn": "horizon x horizon", "cross_attn": "horizon x time + observation tokens"}


def mask_shapes(horizon: int, n_obs: int) -> dict[str, tuple[int, int]]:
    """The shape of each mask array the transformer takes at ``horizon`` and ``n_obs`` steps."""
    return {"self_attn": (horizon, horizon), "cross_attn": (horizon, N_TIME_TOKENS + n_obs)}


def mask_problem(masks: Any, horizon: int, n_obs: int) -> str | None:
    """What is wrong with a mask plugin's return value at these counts (one phrase), or None."""
    if not (hasattr(masks, "self_attn") and hasattr(masks, "cross_attn")):
        return f"returned {type(masks).__name__}, expected imf.attention.AttentionMasks"
    for attr, shape in mask_shapes(horizon, n_obs).items():
        value = getattr(masks, attr)
        if value is None:
            continue
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as exc:
            return f"{attr} is not a boolean array ({exc})"
        if array.dtype.kind not in "biuf":
            return f"{attr} is not a boolean array (dtype {array.dtype})"
        if array.shape != shape:
            return f"{attr} has shape {array.shape}, expected {shape} ({_WHAT[attr]})"
        empty = np.flatnonzero(~array.astype(bool).any(axis=1))
        if empty.size:
            return f"{attr} row {int(empty[0])} attends to nothing (attention would be NaN)"
    return None


def call_mask(policy: Any) -> Any:
    """What the ``imf.masks`` plugin named by ``policy.mask`` returns, called with its checked
    options at ``policy``'s horizon and observation steps (unchecked: see ``resolve_masks``)."""
    name = policy.mask
    mask_fn = registry.get("imf.masks", name)
    opts = resolve_options(mask_fn, policy.mask_options, "policy.mask_options", f"mask '{name}'")
    return mask_fn(*(policy.horizon, N_TIME_TOKENS, policy.n_obs_steps) + (() if opts is None else (opts,)))


def resolve_masks(policy: Any) -> Any:
    """``call_mask``'s masks; a ConfigError naming policy.mask when they are not what the
    transformer takes."""
    return check_masks(policy.mask, call_mask(policy), policy.horizon, policy.n_obs_steps)


def check_masks(name: str, masks: Any, horizon: int, n_obs: int) -> Any:
    """``masks`` (from the plugin ``name``) when the transformer takes them, else a ConfigError
    naming policy.mask: a wrong shape would fail deep inside attention."""
    problem = mask_problem(masks, horizon, n_obs)
    if problem:
        raise ConfigError(f"config key 'policy.mask': plugin '{name}': {problem}")
    return masks
