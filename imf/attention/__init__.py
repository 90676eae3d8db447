"""Attention-mask plugins (group ``imf.masks``).

A mask plugin is a callable ``(n_action, n_time, n_obs) -> AttentionMasks`` (``Mask``, imf/contracts.py;
one that declares ``Options`` gets them as a fourth argument).
Masks are boolean numpy arrays where True means "may attend", or None for no
mask. Self-attention runs over the n_action action tokens; cross-attention
goes from action tokens to the condition tokens, laid out as n_time time
tokens followed by n_obs observation tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from imf.contracts import Mask  # the group's contract (imf/contracts.py), on this part's face

__all__ = ["AttentionMasks", "Mask", "causal", "full"]  # the face; the masks are found as plugins


@dataclass(frozen=True)
class AttentionMasks:
    self_attn: np.ndarray | None  # (n_action, n_action) bool, or None = attend everywhere
    cross_attn: np.ndarray | None  # (n_action, n_time + n_obs) bool, or None


def _check_counts(n_action: int, n_time: int, n_obs: int) -> None:
    for label, n in (("n_action", n_action), ("n_time", n_time), ("n_obs", n_obs)):
        if n < 0 or (label == "n_action" and n < 1):
            raise ValueError(f"mask: {label} must be positive, got {n}")


def causal(n_action: int, n_time: int, n_obs: int) -> AttentionMasks:
    """Diffusion Policy's causal_attn=True: action i sees actions j <= i, every time
    token, and observation token k iff k <= i."""
    _check_counts(n_action, n_time, n_obs)
    i = np.arange(n_action)[:, None]
    self_attn = np.arange(n_action)[None, :] <= i  # (A, A) lower triangular
    obs_visible = np.arange(n_obs)[None, :] <= i  # (A, O)
    time_visible = np.ones((n_action, n_time), dtype=bool)  # (A, T)
    cross = np.concatenate([time_visible, obs_visible], axis=1)  # (A, T + O)
    return AttentionMasks(self_attn=self_attn, cross_attn=cross)


def full(n_action: int, n_time: int, n_obs: int) -> AttentionMasks:
    """No mask anywhere (causal_attn=False)."""
    _check_counts(n_action, n_time, n_obs)
    return AttentionMasks(self_attn=None, cross_attn=None)
