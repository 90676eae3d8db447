"""``easy_first``: the easiest episodes first, the pool growing to all of them.

Difficulty is what the data holds: the expert's episode length (``by: length``; a short
demonstration is an easy start), or how far the T starts from the goal (``by: distance``:
its centre's distance over the 512-unit table plus its angle to the goal's over pi, the two
weighted alike). The pool holds the easiest ``start`` share of the episodes at the start and
grows linearly to all of them once ``ramp`` of training is done.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from imf.curricula import Curriculum, TrainEpisodes
from imf.errors import DataError, OptionError
from imf.pusht import GOAL_POSE

ORDERS = ("length", "distance")
TABLE = 512.0  # the table's side in world units


@dataclass
class EasyFirstOptions:
    by: str = "length"
    start: float = 0.25  # share of the episodes in the first pool, (0, 1]
    ramp: float = 0.5  # share of training after which the pool holds every episode, (0, 1]

    def __post_init__(self) -> None:
        if self.by not in ORDERS:
            raise OptionError("by", f"got {self.by!r}, allowed: {', '.join(ORDERS)}")
        for key in ("start", "ramp"):
            value = getattr(self, key)
            if not 0.0 < value <= 1.0:
                raise OptionError(key, f"must be in (0, 1], got {value}")


def difficulty(episodes: TrainEpisodes, by: str) -> np.ndarray:
    """(E,) larger is harder."""
    if by == "length":
        return episodes.lengths.astype(np.float64)
    state = episodes.first_state  # (E, 5)
    gap = np.hypot(state[:, 2] - GOAL_POSE[0], state[:, 3] - GOAL_POSE[1]) / TABLE
    turn = np.abs((state[:, 4] - GOAL_POSE[2] + math.pi) % (2 * math.pi) - math.pi) / math.pi
    return gap + turn


class EasyFirst(Curriculum):
    Options = EasyFirstOptions

    def __init__(self, options: EasyFirstOptions) -> None:
        super().__init__(options)
        self._order: np.ndarray | None = None

    def check(self, episodes: TrainEpisodes) -> None:
        if self.options.by == "distance" and episodes.first_state is None:
            raise DataError("data.curriculum easy_first with by=distance needs the array 'data/state' "
                            "(the T's pose), which this data set lacks; use by=length")

    def pool(self, episodes: TrainEpisodes, epoch: int, progress: float) -> np.ndarray:
        if self._order is None:  # stable: equal difficulties keep the buffer order
            self._order = episodes.ids[np.argsort(difficulty(episodes, self.options.by), kind="stable")]
        o = self.options
        share = o.start + (1.0 - o.start) * min(1.0, progress / o.ramp)
        n = min(len(episodes), max(1, math.ceil(share * len(episodes) - 1e-9)))
        return np.sort(self._order[:n])
