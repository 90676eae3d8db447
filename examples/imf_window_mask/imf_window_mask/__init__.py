"""Banded attention for imf: action token i attends to tokens within WIDTH steps behind it.

A third-party plugin: it returns imf's ``AttentionMasks`` and is found through
the ``imf.masks`` entry point declared in its own pyproject.toml. The band
width comes from ``IMF_WINDOW_WIDTH`` (default 4), so the plugin stays a
plain function of the token counts.
"""
from __future__ import annotations

import os

import numpy as np

from imf.attention import AttentionMasks


def _width() -> int:
    value = os.environ.get("IMF_WINDOW_WIDTH", "4")
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"IMF_WINDOW_WIDTH must be a positive integer, got {value!r}")
    return int(value)


def window(n_action: int, n_time: int, n_obs: int):
    """Self-attention: i sees j with i - width < j <= i. Cross-attention: every time
    token, and observation k iff i - width < k <= i."""
    width = _width()
    i = np.arange(n_action)[:, None]
    j = np.arange(n_action)[None, :]
    self_attn = (j <= i) & (j > i - width)  # (A, A) band below the diagonal
    k = np.arange(n_obs)[None, :]
    obs = (k <= i) & (k > i - width)  # (A, O)
    cross = np.concatenate([np.ones((n_action, n_time), dtype=bool), obs], axis=1)
    return AttentionMasks(self_attn=self_attn, cross_attn=cross)
