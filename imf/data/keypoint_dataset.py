"""PushTKeypointDataset: windows of the low-dimensional PushT observation (Diffusion Policy's
pusht_lowdim): item["obs"]["keypoints"] is float32 (horizon, 20), the nine T keypoints and the
agent position per frame (imf.data.lowdim), item["action"] float32 (horizon, 2), world units.

The split (validation episodes, max_train_episodes) is the image data set's, so one data set
gives the same train and validation episodes whichever observation a run uses.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from imf.data.dataset import ReplayWindows
from imf.data.lowdim import agent_pos_of, keypoint_obs
from imf.data.normalizer import MinMaxNormalizer
from imf.data.replay_buffer import KEYPOINT_TASK_ARRAYS, ReplayBuffer


class PushTKeypointDataset(ReplayWindows):
    REQUIRED = KEYPOINT_TASK_ARRAYS

    def __init__(self, buffer: ReplayBuffer | str | os.PathLike, *args: Any, **kwargs: Any) -> None:
        super().__init__(buffer, *args, **kwargs)
        arrays = self.buffer.arrays
        self.obs = keypoint_obs(arrays["keypoint"], arrays["state"][:, :2])  # (N, 20)
        self.agent_pos = agent_pos_of(self.obs)  # (N, 2), a view

    def get_normalizer(self, action_frame: str = "world") -> MinMaxNormalizer:
        """Min-max per dimension over the training episodes, the actions as fit_actions fits them."""
        train_rows = self.train_rows()
        normalizer = MinMaxNormalizer()
        self.fit_actions(normalizer, action_frame)
        normalizer.fit("keypoints", self.obs[train_rows])
        normalizer.fit("agent_pos", self.agent_pos[train_rows])
        return normalizer

    def gather(self, frames: np.ndarray) -> dict[str, Any]:
        obs = self.obs[frames]  # (B, horizon, 20)
        return {"obs": {"keypoints": torch.from_numpy(obs),
                        "agent_pos": torch.from_numpy(np.ascontiguousarray(agent_pos_of(obs)))},  # (B, horizon, 2)
                "action": torch.from_numpy(self.actions[frames])}  # (B, horizon, 2)
