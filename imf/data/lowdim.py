"""The low-dimensional PushT observation (Diffusion Policy's pusht_lowdim): the T's nine
keypoints and the agent position, 20 numbers per step.

One function builds it from the replay buffer's `keypoint` and `state` arrays in training and
from the simulator in rollouts, so the two can never disagree.
"""
from __future__ import annotations

import numpy as np

from imf.errors import DataError

N_KEYPOINTS = 9
KEYPOINT_OBS_DIM = 2 * N_KEYPOINTS + 2  # (x, y) of 9 keypoints, then agent (x, y)


def keypoint_obs(keypoint: np.ndarray, agent_pos: np.ndarray) -> np.ndarray:
    """(..., 9, 2) keypoints + (..., 2) agent position -> float32 (..., 20)."""
    keypoint = np.asarray(keypoint, dtype=np.float32)
    agent_pos = np.asarray(agent_pos, dtype=np.float32)
    if keypoint.shape[-2:] != (N_KEYPOINTS, 2) or agent_pos.shape[-1] != 2 \
            or keypoint.shape[:-2] != agent_pos.shape[:-1]:
        raise DataError(f"keypoint observation needs keypoints (..., 9, 2) and agent_pos (..., 2) "
                        f"with the same leading shape; got {keypoint.shape} and {agent_pos.shape}")
    flat = keypoint.reshape(*keypoint.shape[:-2], 2 * N_KEYPOINTS)
    return np.concatenate([flat, agent_pos], axis=-1)


def agent_pos_of(obs: np.ndarray) -> np.ndarray:
    """The agent position (..., 2) inside keypoint observations (..., 20)."""
    return obs[..., 2 * N_KEYPOINTS:]
