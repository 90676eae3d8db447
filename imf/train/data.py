"""The data a trial trains on: the user's replay buffer or the cached scripted demos."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch.utils.data import DataLoader

from imf.config import Config
from imf.data import (MinMaxNormalizer, PoolSampler, PushTImageDataset, PushTKeypointDataset, ReplayBuffer,
                      validation_mask)


def resolve_data_path(cfg: Config, say: Callable[[str], None]) -> Path:
    if cfg.data.path:
        return Path(cfg.data.path).expanduser()
    from imf.pusht import DemoRecipe, ensure_demo_dataset  # only needed without a data set

    d = cfg.data
    recipe = DemoRecipe(d.expert_noise, d.expert_finish, d.expert_pace)
    how = f", {recipe.describe()}" if recipe.describe() else ""
    say(f"data: no data.path given; using {d.demo_episodes} scripted demo episodes "
        f"(seed {d.demo_seed}{how}, made once and cached)")
    return ensure_demo_dataset(d.demo_episodes, seed=d.demo_seed, cache_dir=d.cache_dir, recipe=recipe)


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
    return train, val, train.get_normalizer(p.action_frame), path


def data_counts(cfg: Config, train: Any) -> dict[str, int]:
    """summary.json's ``data``: the data set's episodes, its validation split, and the
    training episodes the trial draws from (the rest, less what max_train_episodes leaves out)."""
    n = train.buffer.n_episodes
    val = validation_mask(n, cfg.data.val_ratio, cfg.data.split_seed)
    return {"episodes": n, "val_episodes": int(val.sum()), "train_episodes": int(train.train_mask.sum())}


def loader_workers(setting: str, device: torch.device) -> int:
    """``training.num_workers`` as a count: auto is min(8, cores - 1) on CUDA, 0 elsewhere (on a
    CPU the workers would take cores from the training step itself)."""
    if setting != "auto":
        return int(setting)
    return min(8, max(0, (os.cpu_count() or 1) - 1)) if device.type == "cuda" else 0


def _window_episodes(dataset: Any) -> np.ndarray:
    """(W,) each item's episode, for the curriculum's pools; a plain dataset's items stand alone."""
    of = getattr(dataset, "window_episodes", None)
    return of() if of is not None else np.arange(len(dataset))


def make_loader(dataset: Any, cfg: Config, shuffle: bool, generator: torch.Generator | None,
                device: torch.device = torch.device("cpu")) -> DataLoader:
    """Batches for ``device``: pinned on CUDA (so the copy can be non-blocking), images uint8.

    The order comes from ``generator`` alone (the sampler's): the loader's own generator, which
    a new iterator draws its workers' base seed from, is a separate one, so neither the order nor
    the global RNG depends on whether the workers persist across epochs (0 workers and N give
    the same batches and the same losses)."""
    workers = loader_workers(cfg.training.num_workers, device)
    sampler = PoolSampler(_window_episodes(dataset), generator) if shuffle else None
    return DataLoader(dataset, batch_size=cfg.training.batch_size, sampler=sampler,
                      generator=torch.Generator().manual_seed(cfg.training.seed), num_workers=workers,
                      pin_memory=device.type == "cuda", drop_last=False,
                      persistent_workers=workers > 0, prefetch_factor=4 if workers > 0 else None)


def rebatched(loader: DataLoader, batch_size: int) -> DataLoader:
    """``loader`` at another batch: the same dataset, sampler (so the same order and curriculum
    pools), generator and workers."""
    return DataLoader(loader.dataset, batch_size=batch_size, sampler=loader.sampler,
                      generator=loader.generator, num_workers=loader.num_workers,
                      pin_memory=loader.pin_memory, drop_last=loader.drop_last,
                      persistent_workers=loader.persistent_workers, prefetch_factor=loader.prefetch_factor)
