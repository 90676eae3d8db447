"""Replay-buffer data: zarr reader/writer, window sampler, normaliser.

The names below are the data's face for other parts; each loads its module on first use (PEP 562
``__getattr__``): the datasets and the pool import torch, the replay buffer, sampler and size
check do not.
"""
from __future__ import annotations

from imf.faces import lazy_names

_FACE = {"PushTImageDataset": "dataset", "PushTKeypointDataset": "keypoint_dataset", "KEYPOINT_OBS_DIM": "lowdim",
         "agent_pos_of": "lowdim", "keypoint_obs": "lowdim", "MinMaxNormalizer": "normalizer",
         "PoolSampler": "pool", "ReplayBuffer": "replay_buffer", "copy_episodes": "replay_buffer",
         "prepare_output": "replay_buffer", "read_episode_ends": "replay_buffer",
         "write_episodes": "replay_buffer", "train_mask": "sampler", "validation_mask": "sampler",
         "check_data_size": "size", "describe_store": "store_info",
         "WindowSampler": "sampler"}  # benchmarks/speed/grid_cost.py counts windows as training does
__all__ = sorted(_FACE)


__getattr__ = lazy_names(__name__, _FACE, globals())
