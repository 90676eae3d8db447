"""A trial's curriculum (``data.curriculum``): the training episodes shown to the plugin, its
checks before the run folder changes, and the pool set on the loader's sampler each epoch."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from imf.config import Config
from imf.curricula import Curriculum, TrainEpisodes
from imf.data import PoolSampler, ReplayBuffer, train_mask
from imf.errors import DataError
from imf.registry import plugin_and_options
from imf.train.data import resolve_data_path


def train_episodes(buffer: ReplayBuffer, mask: np.ndarray) -> TrainEpisodes:
    ids = np.nonzero(mask)[0]
    starts = np.concatenate([[0], buffer.episode_ends[:-1]]).astype(np.int64)
    state = buffer.arrays.get("state")
    return TrainEpisodes(ids=ids, lengths=buffer.episode_lengths[ids],
                         first_state=None if state is None else np.asarray(state)[starts[ids]])


def load_curriculum(cfg: Config) -> Curriculum:
    plugin, options = plugin_and_options(cfg, "data.curriculum_options")
    return plugin(options)


def check_curriculum(cfg: Config) -> None:
    """Refuse, before anything is written, a curriculum the data set cannot serve (one line)."""
    if cfg.data.curriculum == "none":
        return
    data_path = resolve_data_path(cfg, lambda _: None)
    try:
        buffer = ReplayBuffer.open(data_path, required=("state",), only_required=True)
    except DataError:  # no usable data/state: the curriculum says whether it needs one
        buffer = ReplayBuffer.open(data_path, required=(), only_required=True)
    d = cfg.data
    mask = train_mask(buffer.n_episodes, d.val_ratio, d.split_seed, d.max_train_episodes)
    load_curriculum(cfg).check(train_episodes(buffer, mask))


def progress_of(cfg: Config, epoch: int, train_s: float) -> float:
    """The share of training done, as the learning-rate schedule counts it: of the epochs or of
    the time budget, whichever is further along."""
    t = cfg.training
    done = max(epoch / max(1, t.num_epochs), train_s / t.time_budget_s if t.time_budget_s else 0.0)
    return min(1.0, max(0.0, done))


class CurriculumDriver:
    """Sets each epoch's pool on the sampler; says when it changes."""

    def __init__(self, cfg: Config, dataset: Any, sampler: PoolSampler, say: Callable[[str], None]) -> None:
        self.cfg, self.sampler, self.say = cfg, sampler, say
        self.curriculum = load_curriculum(cfg)
        self.episodes = train_episodes(dataset.buffer, dataset.train_mask)
        self.curriculum.check(self.episodes)
        self.size: int | None = None

    @property
    def active(self) -> bool:
        return self.cfg.data.curriculum != "none"

    def start_epoch(self, epoch: int, train_s: float) -> int:
        """The pool's episode count for ``epoch`` (set on the sampler)."""
        pool = self.curriculum.pool(self.episodes, epoch, progress_of(self.cfg, epoch, train_s))
        whole = len(pool) == len(self.episodes)
        self.sampler.set_pool(None if whole else pool)
        if self.active and len(pool) != self.size:
            self.say(f"curriculum {self.cfg.data.curriculum}: epoch {epoch + 1} trains on "
                     f"{len(pool)} of {len(self.episodes)} training episodes")
        self.size = len(pool)
        return len(pool)
