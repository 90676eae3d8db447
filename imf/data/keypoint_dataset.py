"""PushTKeypointDataset: windows of the low-dimensional PushT observation (Diffusion Policy's
pusht_lowdim): item["obs"]["keypoints"] is float32 (horizon, 20), the nine T keypoints and the
agent position per frame (imf.data.lowdim), item["action"] float32 (horizon, 2), world units.

The split (validation episodes, max_train_episodes) is the image data set's, so one data set
gives the same train and validation episodes whichever observation a run uses.
"""
from __future__ import annotations

import copy
import os
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from imf.data.lowdim import agent_pos_of, keypoint_obs
from imf.data.normalizer import MinMaxNormalizer
from imf.data.replay_buffer import KEYPOINT_TASK_ARRAYS, ReplayBuffer
from imf.data.sampler import WindowSampler, downsample_mask, validation_mask
from imf.errors import DataError


class PushTKeypointDataset(Dataset):
    def __init__(self, buffer: ReplayBuffer | str | os.PathLike, horizon: int, n_obs_steps: int,
                 n_action_steps: int, val_ratio: float = 0.02, split_seed: int = 42,
                 max_train_episodes: int | None = 90, val: bool = False) -> None:
        if isinstance(buffer, (str, os.PathLike)):
            buffer = ReplayBuffer.open(buffer, required=KEYPOINT_TASK_ARRAYS, only_required=True)
        if "keypoint" not in buffer.arrays:
            raise DataError(f"replay buffer '{buffer.path}' has no array 'data/keypoint', "
                            f"which policy.obs_type=keypoints needs")
        if not 1 <= n_obs_steps <= horizon:
            raise DataError(f"n_obs_steps must be in [1, horizon={horizon}], got {n_obs_steps}")
        if max_train_episodes is not None and max_train_episodes < 1:
            raise DataError(f"max_train_episodes must be >= 1 (or None for all), got {max_train_episodes}")
        self.buffer = buffer
        self.horizon, self.n_obs_steps, self.n_action_steps = horizon, n_obs_steps, n_action_steps
        val_mask = validation_mask(buffer.n_episodes, val_ratio, split_seed)
        self.train_mask = downsample_mask(~val_mask, max_train_episodes, split_seed)
        self.val = val
        self.obs = keypoint_obs(buffer.arrays["keypoint"], buffer.arrays["state"][:, :2])  # (N, 20)
        self.actions = buffer.arrays["action"].astype(np.float32, copy=False)  # (N, 2)
        self.sampler = self._make_sampler(~self.train_mask if val else self.train_mask)

    def _make_sampler(self, mask: np.ndarray) -> WindowSampler:
        return WindowSampler(self.buffer.episode_ends, self.horizon, pad_before=self.n_obs_steps - 1,
                             pad_after=self.n_action_steps - 1, episode_mask=mask)

    def get_validation_dataset(self) -> "PushTKeypointDataset":
        val_set = copy.copy(self)
        val_set.val = True
        val_set.sampler = self._make_sampler(~self.train_mask)
        return val_set

    def get_normalizer(self) -> MinMaxNormalizer:
        """Min-max per dimension over the training episodes, as for actions."""
        train_rows = np.repeat(self.train_mask, self.buffer.episode_lengths)  # (N,) bool
        normalizer = MinMaxNormalizer()
        normalizer.fit("action", self.actions[train_rows])
        normalizer.fit("keypoints", self.obs[train_rows])
        normalizer.fit("agent_pos", agent_pos_of(self.obs[train_rows]))
        return normalizer

    def __len__(self) -> int:
        return len(self.sampler)

    def __getitem__(self, index: int) -> dict[str, Any]:
        frames = self.sampler.frame_indices(index)  # (horizon,)
        obs = self.obs[frames]  # (horizon, 20)
        return {"obs": {"keypoints": torch.from_numpy(obs),
                        "agent_pos": torch.from_numpy(np.ascontiguousarray(agent_pos_of(obs)))},
                "action": torch.from_numpy(self.actions[frames])}
