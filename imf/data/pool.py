"""The training loader's sampler: each epoch's windows from the episodes a curriculum pools."""
from __future__ import annotations

import numpy as np
import torch

from imf.errors import DataError


class PoolSampler:
    """Window indices of one epoch: random permutations of the windows of the episodes in the
    pool, repeated until the epoch holds as many as the whole set has (an epoch is the same
    work whatever the pool). With the whole set as the pool it draws exactly what torch's
    RandomSampler draws from the same generator."""

    def __init__(self, window_episodes: np.ndarray, generator: torch.Generator) -> None:
        self.window_episodes = np.asarray(window_episodes)  # (W,) the episode of each window
        self.generator = generator
        self.windows = np.arange(len(self.window_episodes))

    def set_pool(self, episodes: np.ndarray | None) -> None:
        """Sample from these episodes' windows from the next epoch on (None: all)."""
        if episodes is None:
            self.windows = np.arange(len(self.window_episodes))
            return
        self.windows = np.nonzero(np.isin(self.window_episodes, episodes))[0]
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
