"""Banded attention for imf: action token i attends to tokens within ``width`` steps behind it.

A third-party plugin: it returns imf's ``AttentionMasks`` and is found through the
``imf.masks`` entry point declared in its own pyproject.toml. Its one option, ``width``,
lives in the run's config as ``policy.mask_options.width`` (default 4): imf checks it
against ``WindowOptions`` and records it in config.yaml and in the checkpoint.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imf.attention import AttentionMasks
from imf.errors import OptionError


@dataclass
class WindowOptions:
    width: int = 4  # how many steps back a token sees, itself included

    def __post_init__(self) -> None:
        if self.width < 1:
            raise OptionError("width", f"must be >= 1, got {self.width}")


def window(n_action: int, n_time: int, n_obs: int, options: WindowOptions) -> AttentionMasks:
    """Self-attention: i sees j with i - width < j <= i. Cross-attention: every time
    token, and observation k iff i - width < k <= i."""
    width = options.width
    i = np.arange(n_action)[:, None]
    j = np.arange(n_action)[None, :]
    self_attn = (j <= i) & (j > i - width)  # (A, A) band below the diagonal
    k = np.arange(n_obs)[None, :]
    obs = (k <= i) & (k > i - width)  # (A, O)
    cross = np.concatenate([np.ones((n_action, n_time), dtype=bool), obs], axis=1)
    return AttentionMasks(self_attn=self_attn, cross_attn=cross)


window.Options = WindowOptions  # what imf.registry.options looks for
