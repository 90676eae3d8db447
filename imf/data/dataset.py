"""PushTImageDataset: windows of the image PushT replay buffer as torch tensors (world units).

Images are returned for the first n_obs_steps frames of each window only (the policy looks
at no others): item["obs"]["image"] is uint8 (n_obs_steps, 3, 96, 96), 0-255 as stored, while
agent_pos and action span the whole horizon. Images stay uint8 until they reach the policy's
device (a quarter of float32's bytes through the loader and the copy); the policy scales them
to [0, 1] there (imf/policy.py, ``encode_obs``).
"""
from __future__ import annotations

import copy
import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from imf.data.normalizer import MinMaxNormalizer
from imf.data.replay_buffer import IMAGE_TASK_ARRAYS, ReplayBuffer
from imf.data.sampler import WindowSampler, train_mask
from imf.errors import DataError


class ReplayWindows(Dataset, ABC):
    """Windows over a replay buffer's episodes, split as the reference splits them; subclasses
    say which arrays they read (``REQUIRED``), set ``agent_pos`` ((N, 2) world units, every buffer
    frame's) and say what an item holds.

    Like the reference, the validation windows are those of every episode outside the
    training mask (the validation split plus the episodes max_train_episodes left out).
    """

    REQUIRED: tuple[str, ...] = IMAGE_TASK_ARRAYS

    def __init__(self, buffer: ReplayBuffer | str | os.PathLike, horizon: int, n_obs_steps: int,
                 n_action_steps: int, val_ratio: float = 0.02, split_seed: int = 42,
                 max_train_episodes: int | None = 90, val: bool = False) -> None:
        if isinstance(buffer, (str, os.PathLike)):
            buffer = ReplayBuffer.open(buffer, required=self.REQUIRED, only_required=True)
        missing = [name for name in self.REQUIRED if name not in buffer.arrays]
        if missing:
            raise DataError(f"replay buffer '{buffer.path}' has no array 'data/{missing[0]}', "
                            f"which {type(self).__name__} needs")
        if not 1 <= n_obs_steps <= horizon:
            raise DataError(f"n_obs_steps must be in [1, horizon={horizon}], got {n_obs_steps}")
        if max_train_episodes is not None and max_train_episodes < 1:
            raise DataError(f"max_train_episodes must be >= 1 (or None for all), got {max_train_episodes}")
        self.buffer = buffer
        self.horizon, self.n_obs_steps, self.n_action_steps = horizon, n_obs_steps, n_action_steps
        self.train_mask = train_mask(buffer.n_episodes, val_ratio, split_seed, max_train_episodes)
        self.val = val
        self.actions = buffer.arrays["action"].astype(np.float32, copy=False)  # (N, 2)
        self.sampler = self._make_sampler(~self.train_mask if val else self.train_mask)

    def _make_sampler(self, mask: np.ndarray) -> WindowSampler:
        return WindowSampler(self.buffer.episode_ends, self.horizon, pad_before=self.n_obs_steps - 1,
                             pad_after=self.n_action_steps - 1, episode_mask=mask)

    def window_episodes(self) -> np.ndarray:
        """(W,) the buffer index of each window's episode."""
        starts = np.concatenate([[0], self.buffer.episode_ends[:-1]])
        return np.searchsorted(starts, self.sampler.windows[:, 0], side="right") - 1

    def get_validation_dataset(self) -> "ReplayWindows":
        val_set = copy.copy(self)
        val_set.val = True
        val_set.sampler = self._make_sampler(~self.train_mask)
        return val_set

    def action_offsets(self) -> np.ndarray:
        """(W * horizon, 2) every window's actions less the agent position at its last observed
        frame: what a policy in the agent frame (policy.action_frame) predicts, and its normaliser's fit."""
        frames = self.sampler.batch_frame_indices(np.arange(len(self.sampler)))  # (W, horizon)
        origin = self.agent_pos[frames[:, self.n_obs_steps - 1]]  # (W, 2)
        return (self.actions[frames] - origin[:, None]).reshape(-1, self.actions.shape[-1])

    def fit_actions(self, normalizer: MinMaxNormalizer, action_frame: str) -> None:
        """Fit "action" on the training episodes: world-unit actions, or their offsets (``agent``)."""
        normalizer.fit("action", self.action_offsets() if action_frame == "agent" else self.actions[self.train_rows()])

    def train_rows(self) -> np.ndarray:
        """(N,) bool: the buffer rows of the training episodes (what normalisers are fitted on)."""
        return np.repeat(self.train_mask, self.buffer.episode_lengths)

    def __len__(self) -> int:
        return len(self.sampler)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: list[int]) -> list[dict[str, Any]]:
        """The items of a batch from one gather of all its windows: what a DataLoader fetches,
        cheaper than a read an item (benchmarks/RUNS.md, "Training step overheads")."""
        batch = self.gather(self.sampler.batch_frame_indices(np.asarray(indices)))
        return [_row(batch, b) for b in range(len(indices))]

    @abstractmethod
    def gather(self, frames: np.ndarray) -> dict[str, Any]:
        """The batch of windows whose buffer frames are ``frames`` (B, horizon)."""


def _row(batch: dict[str, Any], b: int) -> dict[str, Any]:
    return {k: _row(v, b) if isinstance(v, dict) else v[b] for k, v in batch.items()}


class PushTImageDataset(ReplayWindows):
    """Training windows of images + agent_pos; `val=True` gives the validation windows."""

    def __init__(self, buffer: ReplayBuffer | str | os.PathLike, *args: Any, **kwargs: Any) -> None:
        super().__init__(buffer, *args, **kwargs)
        self.images = self.buffer.arrays["img"]                    # (N, 96, 96, 3) uint8
        self.agent_pos = self.buffer.arrays["state"][:, :2].astype(np.float32)  # (N, 2)

    def get_normalizer(self, action_frame: str = "world") -> MinMaxNormalizer:
        """Min-max over the training episodes' action (fit_actions) and agent_pos; image [0, 1] -> [-1, 1]."""
        train_rows = self.train_rows()
        normalizer = MinMaxNormalizer()
        self.fit_actions(normalizer, action_frame)
        normalizer.fit("agent_pos", self.agent_pos[train_rows])
        normalizer.set_identity_range("image", 0.0, 1.0)
        return normalizer

    def gather(self, frames: np.ndarray) -> dict[str, Any]:
        image = self.images[frames[:, :self.n_obs_steps]]  # (B, n_obs, 96, 96, 3) uint8
        image = np.ascontiguousarray(np.moveaxis(image, -1, 2))  # (B, n_obs, 3, 96, 96) uint8
        return {"obs": {"image": torch.from_numpy(image),
                        "agent_pos": torch.from_numpy(self.agent_pos[frames])},  # (B, horizon, 2)
                "action": torch.from_numpy(self.actions[frames])}  # (B, horizon, 2)
