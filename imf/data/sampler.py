"""Episode masks and padded windows over a replay buffer (the reference's sampling rules)."""
from __future__ import annotations

import numpy as np
import torch

from imf.errors import DataError


def validation_mask(n_episodes: int, val_ratio: float, seed: int) -> np.ndarray:
    """(E,) bool: n_val = min(max(1, round(E * val_ratio)), E - 1) episodes drawn by default_rng(seed)."""
    mask = np.zeros(n_episodes, dtype=bool)
    if val_ratio <= 0:
        return mask
    n_val = min(max(1, round(n_episodes * val_ratio)), n_episodes - 1)
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
        start, length, offset = self.windows[index]
        return start + np.clip(offset + self._steps, 0, length - 1)


class PoolSampler:
    """Window indices of one epoch: random permutations of the windows of the episodes in the
    pool, repeated until the epoch holds as many as the whole set has (an epoch is the same
    work whatever the pool). With the whole set as the pool it draws exactly what torch's
    RandomSampler draws from the same generator."""

    def __init__(self, window_episodes: np.ndarray, generator: torch.Generator) -> None:
        self.window_episodes = np.asarray(window_episodes)  # (W,) the episode of each window
        self.generator = generator
        self.windows = np.arange(len(self.window_episodes))
        self.pool_size: int | None = None  # None: every episode

    def set_pool(self, episodes: np.ndarray | None) -> None:
        """Sample from these episodes' windows from the next epoch on (None: all)."""
        if episodes is None:
            self.windows, self.pool_size = np.arange(len(self.window_episodes)), None
            return
        self.windows = np.nonzero(np.isin(self.window_episodes, episodes))[0]
        self.pool_size = len(episodes)
        if not len(self.windows):
            raise DataError(f"the curriculum's pool of {len(episodes)} episode(s) holds no training window")

    def __len__(self) -> int:
        return len(self.window_episodes)

    def __iter__(self):
        total, n = len(self.window_episodes), len(self.windows)
        for _ in range(total // n):
            yield from self.windows[torch.randperm(n, generator=self.generator).numpy()].tolist()
        rest = total % n
        if rest:
            yield from self.windows[torch.randperm(n, generator=self.generator).numpy()[:rest]].tolist()
