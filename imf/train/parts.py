"""Everything a trial trains with, built once before the loop: the device, the data, the
policy (warm-started when asked), EMA, optimizer, schedule, checkpoints and stopping rules.

The order of construction is fixed: the policy's initial weights come from the seeded RNG.

Mixed precision: the trial autocasts to bf16 on a bf16-capable CUDA device when
training.bf16 is on (on a CPU bf16 is slower than float32, so it stays off there);
``autocast_for`` takes any device, so tests and benchmarks run the same bf16 path on a CPU.
"""
from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from imf.config import Config
from imf.data import MinMaxNormalizer
from imf.errors import ConfigError, NoCudaError
from imf.model import EMAModel, attention_masks
from imf.policy import ImfPolicy, load_weights_partial
from imf.store import RunLayout
from imf.train import checkpoint as ckpt_io
from imf.train.budget import TrainClock, lr_factor
from imf.train.curriculum import CurriculumDriver
from imf.train.data import build_datasets, make_loader, rebatched
from imf.train.stopping import DivergenceDetector, EarlyStopper
from imf.train.validation import ActionProbe


@dataclass
class EarlyBatches:
    """training.early_batch_size: its loader, steps an epoch, and the samples it trains before
    the trial's own batch takes over."""
    loader: Any
    steps_per_epoch: int
    until_samples: int


@dataclass
class TrainParts:
    device: torch.device
    policy: ImfPolicy
    ema: EMAModel | None
    optimizer: torch.optim.Optimizer
    lr_schedule: torch.optim.lr_scheduler.LambdaLR
    shuffle: torch.Generator  # reseeded each epoch: the batch order is a function of seed and epoch
    train_loader: Any
    val_loader: Any | None
    probe: ActionProbe
    steps_per_epoch: int
    curriculum: CurriculumDriver
    clock: TrainClock
    topk: ckpt_io.TopK
    stopper: EarlyStopper
    divergence: DivergenceDetector
    autocast: bool
    early: EarlyBatches | None = None

    def epoch_batches(self, samples_done: int) -> tuple[Any, int]:
        """The next epoch's loader and steps: the early batch's until it has trained its samples."""
        if self.early is not None and samples_done < self.early.until_samples:
            return self.early.loader, self.early.steps_per_epoch
        return self.train_loader, self.steps_per_epoch

    @property
    def scored_policy(self) -> ImfPolicy:
        """The policy the rollouts score: the EMA weights when there are any."""
        return self.ema.averaged_model if self.ema is not None else self.policy


def pick_device(spec: str, source: str = "config key 'training.device'") -> torch.device:
    """The torch device ``spec`` names; a bad one is a ConfigError naming ``source``, a CUDA
    device that is not here a NoCudaError (its own exit code: a sweep marks the slot down)."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise ConfigError(f"{source}: got {spec!r}, allowed: auto, cpu, cuda, cuda:N") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (device.index or 0) >= count:
            label = source.removeprefix("config key ").strip("'")
            raise NoCudaError(f"{label} '{spec}': no CUDA device {device.index or 0} usable "
                              f"here ({_cuda_seen(count)}); use training.device=cpu or auto")
    return device


def _cuda_seen(count: int) -> str:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    seen = (f"torch {torch.__version__} is built without CUDA" if torch.version.cuda is None
            else f"torch {torch.__version__} sees {count} CUDA device(s)")
    return seen + (f", CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else "")


def check_warm_start(cfg: Config, init: dict[str, Any], source: Path) -> None:
    """Before the run folder changes: refuse a checkpoint whose tensors do not fit this run's
    policy (unless training.init_partial); the policy is built only for its shapes."""
    with torch.random.fork_rng(devices=[]):  # the run's own weights come from its seed
        policy = ImfPolicy(cfg, MinMaxNormalizer.from_state_dict(init["normalizer"]),
                           masks=attention_masks(cfg.policy))
    ckpt_io.check_shapes(policy.state_dict(), init.get("ema") or init["policy"], init, cfg.policy,
                         source, cfg.training.init_partial)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def build_parts(cfg: Config, run: RunLayout, device: torch.device, warm: tuple[Path, dict[str, Any]] | None,
                say: Callable[[str], None], trial_id: str) -> TrainParts:
    """Seed, then build every part on ``device``; ``warm`` (a warm start's path and its loaded,
    checked checkpoint) gives its normaliser and EMA weights."""
    t, p = cfg.training, cfg.policy
    seed_everything(t.seed)
    say(f"trial {trial_id}: device {device}, run folder {run.root}")
    train_ds, val_ds, normalizer, _ = build_datasets(cfg, say)
    init_from, init = warm if warm is not None else (None, None)
    if init is not None:
        # Keep the normaliser the weights were trained with, so outputs carry over exactly.
        normalizer = MinMaxNormalizer.from_state_dict(init["normalizer"])
    policy = ImfPolicy(cfg, normalizer, masks=attention_masks(cfg.policy)).to(device)
    if init is not None:
        weights = ckpt_io.weights_with_normalizer(init.get("ema") or init["policy"], init)
        say(ckpt_io.warm_start_line(load_weights_partial(policy, weights), init_from))
    ema = EMAModel(policy, power=t.ema_power, max_value=t.ema_max) if t.use_ema else None
    if t.compile:  # after the EMA copy: the scored policy stays eager
        policy.compile_steps()
    optimizer = make_optimizer(policy, t, device)
    shuffle = torch.Generator()
    train_loader = make_loader(train_ds, cfg, shuffle=True, generator=shuffle, device=device)
    val_loader = make_loader(val_ds, cfg, shuffle=False, generator=None, device=device) if len(val_ds) else None
    probe = ActionProbe(val_ds, t.val_probe_windows, p.n_obs_steps, p.n_action_steps, t.batch_size, seed=t.seed)
    if len(probe):
        say(f"validation: action RMSE on {len(probe)} fixed windows; holding still "
            f"scores {probe.hold_still:.1f} (world units)")
    steps_per_epoch = _steps(train_loader, t.max_train_steps)
    early = None
    if t.early_batch_size:
        early_loader = rebatched(train_loader, t.early_batch_size)
        early = EarlyBatches(early_loader, _steps(early_loader, t.max_train_steps), t.early_batch_samples)
    clock = TrainClock(t.budget_clock, t.time_budget_s)
    lr_schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_factor(t.lr_schedule, t.lr_warmup_steps, _planned_steps(t, steps_per_epoch, early,
                                                                              len(train_ds)), clock))
    topk = ckpt_io.TopK(run.checkpoints, t.checkpoint_topk)
    topk.folder.mkdir(parents=True, exist_ok=True)
    curriculum = CurriculumDriver(cfg, train_ds, train_loader.sampler, say)
    return TrainParts(device, policy, ema, optimizer, lr_schedule, shuffle, train_loader, val_loader,
                      probe, steps_per_epoch, curriculum, clock, topk, EarlyStopper(t.patience),
                      DivergenceDetector(t.divergence_factor, t.divergence_warmup_steps),
                      use_bf16(device, t.bf16), early)


def _planned_steps(t: Any, steps_per_epoch: int, early: EarlyBatches | None, windows: int) -> int:
    """Optimizer steps over training.num_epochs, the early batch's epochs counted at their own
    steps (the cosine of the learning rate ends at the last)."""
    if early is None:
        return steps_per_epoch * t.num_epochs
    per_epoch = min(early.steps_per_epoch * t.early_batch_size, windows)
    early_epochs = min(t.num_epochs, math.ceil(early.until_samples / max(1, per_epoch)))
    return early_epochs * early.steps_per_epoch + (t.num_epochs - early_epochs) * steps_per_epoch


def _steps(loader: Any, max_train_steps: int | None) -> int:
    """Steps an epoch: the loader's batches, at most max_train_steps."""
    return min(len(loader), max_train_steps or len(loader))


# Devices whose AdamW has a fused kernel in every torch this package supports.
FUSED_ADAMW_DEVICES = ("cpu", "cuda")


def make_optimizer(policy: ImfPolicy, t: Any, device: torch.device) -> torch.optim.AdamW:
    """AdamW over the policy's decay groups. Fused where the device has the kernel: one pass over
    every tensor instead of a chain of small ops each, which a small model's step feels
    (benchmarks/RUNS.md, "Training step overheads"). The same update; only the rounding differs."""
    return torch.optim.AdamW(policy.optimizer_groups(t), lr=t.lr, betas=tuple(t.betas),
                             fused=True if device.type in FUSED_ADAMW_DEVICES else None)


def use_bf16(device: torch.device, requested: bool) -> bool:
    """The trial's choice: bf16 autocast on a bf16-capable CUDA device when the config asks."""
    return bool(requested) and device.type == "cuda" and torch.cuda.is_available() \
        and torch.cuda.is_bf16_supported()


def autocast_for(device: torch.device, enabled: bool) -> torch.autocast:
    """bf16 autocast on ``device`` (cuda or cpu), or a no-op context when not enabled."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)
