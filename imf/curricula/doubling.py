"""``doubling``: train on N episodes, then continue on 2N, 4N, ... from the epochs given.

The data-doubling chain of warm starts inside one trial: the weights, optimiser and schedule
carry on while the pool doubles. The pool is the first episodes in buffer order (for the
scripted demos, the first N of a larger set are the N-episode set), so each stage holds the
one before. ``start_episodes: 0`` starts at all / 2**len(at_epochs), so the last stage
trains on every episode.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from imf.curricula import Curriculum, TrainEpisodes
from imf.errors import ConfigError, OptionError


@dataclass
class DoublingOptions:
    start_episodes: int = 0  # episodes of the first stage; 0: all / 2**len(at_epochs)
    at_epochs: list[int] = field(default_factory=lambda: [8, 16])  # the pool doubles at these

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

    def first_stage(self, episodes: TrainEpisodes) -> int:
        n = self.options.start_episodes or len(episodes) // 2 ** len(self.options.at_epochs)
        return max(1, min(n, len(episodes)))

    def pool(self, episodes: TrainEpisodes, epoch: int, progress: float) -> np.ndarray:
        doublings = sum(epoch >= e for e in self.options.at_epochs)
        return episodes.ids[:min(len(episodes), self.first_stage(episodes) * 2 ** doublings)]
