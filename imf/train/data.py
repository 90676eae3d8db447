"""The data a trial trains on: the user's replay buffer or the cached scripted demos."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import torch
from torch.utils.data import DataLoader

from imf.config import Config
from imf.data.dataset import PushTImageDataset
from imf.data.normalizer import MinMaxNormalizer
from imf.data.keypoint_dataset import PushTKeypointDataset
from imf.data.replay_buffer import ReplayBuffer


def resolve_data_path(cfg: Config, say: Callable[[str], None]) -> Path:
    if cfg.data.path:
        return Path(cfg.data.path).expanduser()
    from imf.pusht.expert import ensure_demo_dataset  # only needed without a data set

    say(f"data: no data.path given; using {cfg.data.demo_episodes} scripted demo episodes "
        f"(seed {cfg.data.demo_seed}, made once and cached)")
    return ensure_demo_dataset(cfg.data.demo_episodes, seed=cfg.data.demo_seed,
                               cache_dir=cfg.data.cache_dir)


def build_datasets(cfg: Config, say: Callable[[str], None]) -> tuple[Any, Any, MinMaxNormalizer, Path]:
    path = resolve_data_path(cfg, say)
    p = cfg.policy
    dataset_cls = PushTKeypointDataset if p.obs_type == "keypoints" else PushTImageDataset
    buffer = ReplayBuffer.open(path, required=dataset_cls.REQUIRED, only_required=True)
    train = dataset_cls(buffer, horizon=p.horizon, n_obs_steps=p.n_obs_steps,
                              n_action_steps=p.n_action_steps, val_ratio=cfg.data.val_ratio,
                              split_seed=cfg.data.split_seed,
                              max_train_episodes=cfg.data.max_train_episodes)
    val = train.get_validation_dataset()
    say(f"data: {path} ({buffer.n_episodes} episodes, {buffer.n_steps} steps): "
        f"{len(train)} train windows, {len(val)} val windows")
    return train, val, train.get_normalizer(), path


def make_loader(dataset: Any, cfg: Config, shuffle: bool, generator: torch.Generator | None) -> DataLoader:
    return DataLoader(dataset, batch_size=cfg.training.batch_size, shuffle=shuffle,
                      generator=generator, num_workers=cfg.training.num_workers,
                      pin_memory=False, drop_last=False,
                      persistent_workers=cfg.training.num_workers > 0)
