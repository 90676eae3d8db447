"""Curricula: which training episodes each epoch draws its windows from (group ``imf.curricula``).

A curriculum is a class built as ``cls(options)`` (options: its ``Options`` dataclass, or None
when it declares none). Before training it is shown the training episodes once (``check``:
refuse data that lacks what it orders by); at the start of every epoch ``pool`` names the
episodes that epoch samples from. The pool must be a function of the epoch and the training
progress alone, so a ``--resume`` lands in the same stage. Built-ins: ``none`` (every episode,
every epoch), ``easy_first`` and ``doubling``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

__all__ = ["Curriculum", "NoCurriculum", "TrainEpisodes"]  # the face other parts use


@dataclass(frozen=True)
class TrainEpisodes:
    """The training episodes, in buffer order, and what the data holds of each."""

    ids: np.ndarray  # (E,) episode indices in the replay buffer, ascending
    lengths: np.ndarray  # (E,) steps of each episode
    first_state: np.ndarray | None  # (E, 5) agent x, y, block x, y, angle at the first step

    def __len__(self) -> int:
        return len(self.ids)


class Curriculum(ABC):
    """The helper base of ``imf.curricula`` plugins: it keeps the group's contract
    (``imf.contracts.Curriculum``) with an empty ``check``; a plugin may extend it, or only match
    the contract."""

    def __init__(self, options: object) -> None:
        self.options = options

    def check(self, episodes: TrainEpisodes) -> None:
        """Raise ``imf.errors.DataError`` (one line) when the data lacks what this orders by."""

    @abstractmethod
    def pool(self, episodes: TrainEpisodes, epoch: int, progress: float) -> np.ndarray:
        """The buffer indices of the episodes epoch ``epoch`` samples from; ``progress`` is the
        share of training done when it starts, in [0, 1] (of the epochs or of the time budget,
        whichever is further along, as the learning-rate schedule counts it)."""


class NoCurriculum(Curriculum):
    """Every training episode in every epoch (the reference's sampling)."""

    def pool(self, episodes: TrainEpisodes, epoch: int, progress: float) -> np.ndarray:
        return episodes.ids
