"""``doubling``: train on N episodes, then continue on 2N, 4N, ... after the epochs given.

The data-doubling chain of warm starts inside one trial: the weights, optimiser and schedule
carry on while the pool doubles. The pool is the first episodes in buffer order (for the
scripted demos, the first N of a larger set are the N-episode set), so each stage holds the
one before. ``start_episodes: 0`` makes each stage all / 2**(doublings still to come), so the
last stage trains on every episode.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from imf.curricula import Curriculum, TrainEpisodes
from imf.errors import ConfigError, OptionError


@dataclass
class DoublingOptions:
    start_episodes: int = 0  # episodes of the first stage; 0: all / 2**len(at_epochs)
    # the pool doubles after each of these epochs: [8, 16] trains epochs 1-8 on N, 9-16 on 2N, then 4N
    at_epochs: list[int] = field(default_factory=lambda: [8, 16])

    def __post_init__(self) -> None:
        if self.start_episodes < 0:
            raise OptionError("start_episodes", f"must be >= 0 (0: all / 2**len(at_epochs)), got {self.start_episodes}")
        if not self.at_epochs:
            raise OptionError("at_epochs", "must name at least one epoch (e.g. [8, 16])")
        if any(e < 1 for e in self.at_epochs) or any(b <= a for a, b in zip(self.at_epochs, self.at_epochs[1:])):
            raise OptionError("at_epochs", f"must be increasing epochs >= 1, got {self.at_epochs}")


class Doubling(Curriculum):
    Options = DoublingOptions

    def check(self, episodes: TrainEpisodes) -> None:
        if self.options.start_episodes > len(episodes):
            raise ConfigError(f"config key 'data.curriculum_options.start_episodes': "
                              f"{self.options.start_episodes} is more than the {len(episodes)} "
                              f"training episodes; allowed: 0 (all / 2**len(at_epochs)) to {len(episodes)}")

    def stage_size(self, episodes: TrainEpisodes, doublings: int) -> int:
        """Episodes after ``doublings`` doublings: start x 2**d, or all / 2**(stages left)."""
        total, start = len(episodes), self.options.start_episodes
        if start:
            return min(total, start * 2 ** doublings)
        return max(1, total // 2 ** (len(self.options.at_epochs) - doublings))

    def pool(self, episodes: TrainEpisodes, epoch: int, progress: float) -> np.ndarray:
        doublings = sum(epoch >= e for e in self.options.at_epochs)
        return episodes.ids[:self.stage_size(episodes, doublings)]
