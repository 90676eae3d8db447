"""The config schema: one dataclass per section, checked as it is built, so an unknown key or a
value of the wrong type is a ConfigError that names the key, the value and the fix."""
from __future__ import annotations

import dataclasses
import functools
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from imf.atomic import atomic_write_text
from imf.config.ranges import RANGES, Range
from imf.config.values import coerce as _coerce
from imf.config.values import suggest as _suggest
from imf.errors import ConfigError
from imf.seeds import TEST_START, TRAIN_START
from imf.typed import Kind, kind_of

OBS_TYPES = ("image", "keypoints")
# data.max_train_episodes' default, the reference's: a cap on a smaller data set, never refused
# (any other value above the training episodes is; imf/data/size.py)
MAX_TRAIN_CAP = 90
LR_SCHEDULES = ("cosine", "constant")
ACTION_FRAMES = ("world", "agent")
FINAL_CHECKPOINTS = ("best", "latest")  # eval.final_checkpoint


@dataclass
class PolicyConfig:
    obs_type: str = "image"  # image (96x96 RGB + agent_pos) or keypoints (9 T keypoints + agent_pos)
    mask: str = "causal"  # an imf.masks plugin; `causal_attn` is an alias
    mask_options: dict[str, Any] = field(default_factory=dict)  # the mask plugin's own options
    n_emb: int = 256
    n_layer: int = 8
    n_head: int = 4
    p_drop_emb: float = 0.0
    p_drop_attn: float = 0.3
    n_cond_layers: int = 0  # 0: token-wise MLP over condition tokens
    horizon: int = 10
    n_obs_steps: int = 2
    n_action_steps: int = 8
    action_dim: int = 2
    encoder: str = "resnet18"  # or "small" for CPU smoke runs
    encoder_width: int = 32  # "small": channels of its first two convolutions, w and 2w (the last has 64)
    image_feature_dim: int = 64
    num_keypoints: int = 32
    crop_shape: int = 84
    encoder_resolution: int | None = None  # pixels a side the encoder sees: the crop resized to it; None: the crop's
    time_scale: float = 1.0  # the time embedding sees t * time_scale, t in [0, 1] (docs/policy.md)
    # world: the actions the simulator takes (targets in world units); agent: each an offset from the
    # agent's position at the last observed frame, normalised over those offsets (docs/policy.md)
    action_frame: str = "world"


@dataclass
class ObjectiveConfig:
    name: str = "imf"  # an imf.objectives plugin
    sample_steps: int = 1  # steps at inference (ddpm: its options.steps)
    # The starting noise's standard deviation at inference (flow-type objectives; ddpm only 1).
    # 1 in every preset: narrower starts lost coverage on keypoints (RUNS, "Starting noise, keypoints").
    noise_scale: float = 1.0
    options: dict[str, Any] = field(default_factory=dict)  # the objective's own (its Options class)


@dataclass
class DataConfig:
    path: str | None = None  # a replay-buffer zarr; None: scripted demos, cached
    demo_episodes: int = 100
    demo_seed: int = 0
    expert_noise: float = 0.0  # world units added to the expert's executed targets (not the recorded ones)
    expert_finish: float | None = None  # a coverage the expert pushes on to after success; None: it stops there
    expert_pace: float = 1.0  # a factor on the expert's push speed and target step (1: its own)
    cache_dir: str | None = None  # None: ~/.cache/imf (or $IMF_CACHE)
    val_ratio: float = 0.02
    split_seed: int = 42
    max_train_episodes: int | None = MAX_TRAIN_CAP
    curriculum: str = "none"  # an imf.curricula plugin: which training episodes each epoch samples
    curriculum_options: dict[str, Any] = field(default_factory=dict)  # the curriculum's own (its Options)


@dataclass
class TrainingConfig:
    seed: int = 42
    device: str = "auto"  # auto, cpu, cuda, cuda:N
    num_epochs: int = 350
    batch_size: int = 64
    # a smaller batch first: early_batch_size windows a step until the trial has trained
    # early_batch_samples samples (from the next epoch on), then batch_size; 0: one batch throughout
    early_batch_size: int = 0
    early_batch_samples: int = 0
    grad_accum: int = 1  # micro-batches of batch_size / grad_accum per optimizer step (GPU memory)
    lr: float = 1.0e-4
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    weight_decay: float = 1.0e-3
    encoder_weight_decay: float = 1.0e-6
    lr_warmup_steps: int = 1000
    lr_schedule: str = "cosine"  # after the warm-up: cosine (to 0 at the last epoch or the budget's end) or constant
    grad_clip: float = 1.0
    use_ema: bool = True
    ema_power: float = 0.75
    ema_max: float = 0.9999
    rollout_every: int = 50
    checkpoint_topk: int = 5
    checkpoint_every: int = 1  # epochs between latest.pt writes (rollout epochs always write)
    snapshot_every: int = 0  # keep latest.pt every N epochs as checkpoints/snapshots/epoch=NNNN.pt; 0: none
    patience: int | None = None  # rollouts without a new best before stopping
    divergence_factor: float = 20.0  # loss above factor x running median -> diverged
    divergence_warmup_steps: int = 200
    max_train_steps: int | None = None  # per epoch; None: the whole data set
    time_budget_s: float | None = None  # stop after this much training time (rollouts excluded)
    budget_clock: str = "wall"  # wall, or cpu: CPU seconds / threads (fair on a loaded machine)
    max_val_steps: int | None = None  # validation batches per epoch; None: all
    val_probe_windows: int = 512  # fixed validation windows for the world-unit action RMSE
    # loader processes: auto = min(8, cores - 1) on CUDA (persistent, prefetching), 0 on a CPU,
    # where they would take cores from the training step; or a number
    num_workers: str = "auto"
    bf16: bool = True  # autocast on CUDA only
    compile: bool = False  # torch.compile the training passes (the EMA policy that is scored stays eager)
    init_partial: bool = False  # --init-from: load the tensors whose shapes match, skip the others


@dataclass
class EvalConfig:
    n_test: int = 50
    test_start_seed: int = TEST_START
    n_train: int = 6
    train_start_seed: int = TRAIN_START
    max_steps: int = 300
    legacy: bool = True
    n_workers: int = 0  # 0: one per core, at most 8
    # the checkpoint --final-eval and --holdout score: best (the one the test rollouts chose) or
    # latest (the weights at the end of training, the learning rate decayed)
    final_checkpoint: str = "best"


@dataclass
class LoggingConfig:
    trackers: list[str] = field(default_factory=lambda: ["swanlab"])  # imf.trackers plugins; none: []
    tracker_options: dict = field(default_factory=dict)  # <tracker name> -> its options
    project: str = "imf"
    group: str | None = None
    stores: list[str] = field(default_factory=lambda: ["scoreboard", "iteration-log"])
    every_steps: int = 25  # the host reads the step's loss and metrics this often (one sync)


@dataclass
class SweepConfig:
    name: str = "sweep"
    grid: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    retries: int = 1
    stall_timeout: float = 1800.0
    poll_interval: float = 5.0


@dataclass
class Config:
    name: str = "custom"
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    data: DataConfig = field(default_factory=DataConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, self.to_yaml())


# Mappings that plugins own (imf.registry.options checks them against the plugin's Options).
OPTION_KEYS = ("policy.mask_options", "objective.options", "data.curriculum_options", "logging.tracker_options")


def all_keys(cls: type = Config, prefix: str = "") -> list[str]:
    """Every dotted leaf key of the config tree, e.g. ``policy.n_emb``."""
    return list(_all_keys(cls, prefix))


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    """The dataclass's resolved field types (slow to work out; asked once per config built)."""
    return typing.get_type_hints(cls)


@functools.lru_cache(maxsize=None)
def _all_keys(cls: type, prefix: str) -> tuple[str, ...]:
    keys: list[str] = []
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            keys += _all_keys(tp, f"{prefix}{f.name}.")
        else:
            keys.append(f"{prefix}{f.name}")
    return tuple(keys)


def key_kind(key: str) -> Kind | None:
    """The kind of the value at dotted ``key`` (``data.demo_episodes``: an int); None for a key
    the schema does not have (an alias, a plugin's option) or a section."""
    cls: Any = Config
    *sections, leaf = key.split(".")
    for part in sections:
        cls = _hints(cls).get(part) if dataclasses.is_dataclass(cls) else None
    tp = _hints(cls).get(leaf) if dataclasses.is_dataclass(cls) else None
    return None if tp is None or dataclasses.is_dataclass(tp) else kind_of(tp)


def build(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    """Instantiate dataclass ``cls`` from a nested dict, checking every key and type."""
    if not isinstance(data, dict):
        raise ConfigError(f"config key '{prefix.rstrip('.') or '<root>'}': expected a mapping, got {data!r}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if key not in names:
            choices = [k for k in all_keys() if k.startswith(prefix)] if prefix else list(names)
            raise ConfigError(f"unknown config key '{dotted}'{_suggest(dotted, choices or list(names))}")
        tp = hints[key]
        if dataclasses.is_dataclass(tp):
            kwargs[key] = build(tp, value or {}, f"{dotted}.")
        else:
            kwargs[key] = _coerce(value, tp, dotted)
    return cls(**kwargs)


def _check_choices(cfg: Config) -> None:
    """Keys that take one of a few words, or a size with a floor."""
    p, t = cfg.policy, cfg.training
    if not (t.num_workers == "auto" or t.num_workers.isdigit()):
        raise ConfigError(f"config key 'training.num_workers': got {t.num_workers!r}, allowed: auto "
                          f"or a number >= 0")
    if cfg.eval.final_checkpoint not in FINAL_CHECKPOINTS:
        raise ConfigError(f"config key 'eval.final_checkpoint': got {cfg.eval.final_checkpoint!r}, allowed: "
                          f"{', '.join(FINAL_CHECKPOINTS)}")
    if t.budget_clock not in ("wall", "cpu"):
        raise ConfigError(f"config key 'training.budget_clock': got {t.budget_clock!r}, allowed: wall, cpu")
    if t.lr_schedule not in LR_SCHEDULES:
        raise ConfigError(f"config key 'training.lr_schedule': got {t.lr_schedule!r}, allowed: "
                          f"{', '.join(LR_SCHEDULES)}")
    if p.obs_type not in OBS_TYPES:
        raise ConfigError(f"config key 'policy.obs_type': got {p.obs_type!r}, allowed: {', '.join(OBS_TYPES)}")
    if p.action_frame not in ACTION_FRAMES:
        raise ConfigError(f"config key 'policy.action_frame': got {p.action_frame!r}, allowed: "
                          f"{', '.join(ACTION_FRAMES)}")
    if p.encoder not in ("resnet18", "small"):
        raise ConfigError(f"config key 'policy.encoder': got {p.encoder!r}, allowed: resnet18, small")


@functools.lru_cache(maxsize=None)
def _optional(key: str) -> bool:
    kind = key_kind(key)
    return kind is not None and kind.optional


def _check_number(key: str, value: Any, allowed: Range, optional: bool) -> None:
    """``value``, a number or a list of numbers, each finite and inside ``allowed``."""
    items = value if isinstance(value, list) else [value]
    said = ("each item must be " if isinstance(value, list) else "must be ")
    ranged = allowed.describe() + (" or null" if optional else "")
    if any(isinstance(x, float) and not math.isfinite(x) for x in items):
        raise ConfigError(f"config key '{key}': {said}a finite number {ranged}, got {value}")
    if not all(allowed.holds(x) for x in items):
        raise ConfigError(f"config key '{key}': {said}{ranged}, got {value}")


def check_value(key: str, value: Any) -> None:
    """One value of the numeric ``key`` against its declared range (a sweep's ``--seed``)."""
    if not (value is None and _optional(key)):
        _check_number(key, value, RANGES[key], _optional(key))


def check_ranges(cfg: Config) -> None:
    """Every number inside its declared range (imf/config/ranges.py), nan and inf refused; a list
    of numbers item by item; null only where the field is optional."""
    for key in RANGES:
        section, leaf = key.split(".")
        check_value(key, getattr(getattr(cfg, section), leaf))


def check_early_batch(t: TrainingConfig) -> None:
    """The early batch is set whole (a size and its samples) or not at all, smaller than the batch
    (the memory checks size the batch) and cut into micro-batches like it."""
    if bool(t.early_batch_size) != bool(t.early_batch_samples):
        given, missing = (("early_batch_size", "early_batch_samples") if t.early_batch_size
                          else ("early_batch_samples", "early_batch_size"))
        raise ConfigError(f"config key 'training.{missing}': training.{given}="
                          f"{getattr(t, given)} needs it too (both 0: one batch throughout)")
    if t.early_batch_size >= t.batch_size:
        raise ConfigError(f"config key 'training.early_batch_size': {t.early_batch_size} must be below "
                          f"training.batch_size={t.batch_size} (the batch grows once, to batch_size)")
    if t.early_batch_size % t.grad_accum:
        raise ConfigError(f"config key 'training.grad_accum': {t.grad_accum} must divide "
                          f"training.early_batch_size={t.early_batch_size} (micro-batches of it)")


def validate(cfg: Config) -> None:
    """The ranges of the numbers, then the rules between keys and the words a key takes."""
    check_ranges(cfg)
    p, t = cfg.policy, cfg.training
    if t.batch_size % t.grad_accum:
        raise ConfigError(f"config key 'training.grad_accum': {t.grad_accum} must divide "
                          f"training.batch_size={t.batch_size} (micro-batches of batch_size / grad_accum)")
    check_early_batch(t)
    if len(t.betas) != 2:
        raise ConfigError(f"config key 'training.betas': two numbers in [0, 1), got {t.betas}")
    if p.n_emb % p.n_head:
        raise ConfigError(f"config key 'policy.n_head': {p.n_head} must divide policy.n_emb={p.n_emb}")
    if p.n_obs_steps - 1 + p.n_action_steps > p.horizon:
        raise ConfigError(
            f"config key 'policy.horizon': {p.horizon} is shorter than n_obs_steps - 1 + "
            f"n_action_steps = {p.n_obs_steps - 1 + p.n_action_steps}")
    d = cfg.data
    recipe_keys = [key for key, given in (("data.expert_noise", bool(d.expert_noise)),
                                          ("data.expert_finish", d.expert_finish is not None),
                                          ("data.expert_pace", d.expert_pace != 1.0)) if given]
    if d.path and recipe_keys:
        raise ConfigError(f"config key '{recipe_keys[0]}': it shapes the scripted demonstrations, and "
                          f"data.path={d.path} gives a data set instead; drop one of them")
    _check_choices(cfg)
