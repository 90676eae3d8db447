"""Episode masks and padded windows over a replay buffer (the reference's sampling rules)."""
from __future__ import annotations

import numpy as np

from imf.errors import DataError


def validation_count(n_episodes: int, val_ratio: float) -> int:
    """Episodes held out for validation: min(max(1, round(E * val_ratio)), E - 1); 0 without a ratio."""
    if val_ratio <= 0:
        return 0
    return min(max(1, round(n_episodes * val_ratio)), n_episodes - 1)


def validation_mask(n_episodes: int, val_ratio: float, seed: int) -> np.ndarray:
    """(E,) bool: validation_count(E, val_ratio) episodes drawn by default_rng(seed)."""
    mask = np.zeros(n_episodes, dtype=bool)
    n_val = validation_count(n_episodes, val_ratio)
    if n_val == 0:
        return mask
    rng = np.random.default_rng(seed=seed)
    mask[rng.choice(n_episodes, size=n_val, replace=False)] = True
    return mask


def downsample_mask(mask: np.ndarray, max_n: int | None, seed: int) -> np.ndarray:
    """Keep a random subset (default_rng(seed)) of at most max_n of the True episodes."""
    if max_n is None or mask.sum() <= max_n:
        return mask
    chosen = np.nonzero(mask)[0]
    rng = np.random.default_rng(seed=seed)
    keep = chosen[rng.choice(len(chosen), size=int(max_n), replace=False)]
    out = np.zeros_like(mask)
    out[keep] = True
    return out


def train_mask(n_episodes: int, val_ratio: float, split_seed: int, max_train: int | None) -> np.ndarray:
    """(E,) bool: the training episodes every data set of these settings trains on."""
    return downsample_mask(~validation_mask(n_episodes, val_ratio, split_seed), max_train, split_seed)


class WindowSampler:
    """All windows of `horizon` frames over the masked episodes, padded by repeating edge frames.

    Window starts run from -pad_before to L - horizon + pad_after in each episode of length L;
    both pads are clamped to [0, horizon - 1].
    """

    def __init__(self, episode_ends: np.ndarray, horizon: int, pad_before: int = 0,
                 pad_after: int = 0, episode_mask: np.ndarray | None = None) -> None:
        if horizon < 1:
            raise DataError(f"window horizon must be >= 1, got {horizon}")
        ends = np.asarray(episode_ends, dtype=np.int64)
        mask = np.ones(len(ends), dtype=bool) if episode_mask is None else np.asarray(episode_mask)
        pad_before = min(max(pad_before, 0), horizon - 1)
        pad_after = min(max(pad_after, 0), horizon - 1)
        starts = np.concatenate([[0], ends[:-1]])
        rows = []
        for ep in np.nonzero(mask)[0]:
            length = int(ends[ep] - starts[ep])
            offsets = np.arange(-pad_before, length - horizon + pad_after + 1)
            rows.append(np.stack([np.full_like(offsets, starts[ep]), np.full_like(offsets, length),
                                  offsets], axis=1))
        # (W, 3): episode start in the buffer, episode length, window offset in the episode
        self.windows = np.concatenate(rows) if rows else np.zeros((0, 3), dtype=np.int64)
        self.horizon = horizon
        self._steps = np.arange(horizon)

    def __len__(self) -> int:
        return len(self.windows)

    def frame_indices(self, index: int) -> np.ndarray:
        """(horizon,) buffer indices of window `index`, edge frames repeated where padded."""
        return self.batch_frame_indices(np.asarray([index]))[0]

    def batch_frame_indices(self, indices: np.ndarray) -> np.ndarray:
        """(B, horizon) buffer indices of the windows `indices`, edge frames repeated where padded."""
        start, length, offset = self.windows[indices].T  # each (B,)
        return start[:, None] + np.clip(offset[:, None] + self._steps, 0, length[:, None] - 1)

