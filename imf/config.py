"""Typed configuration: dataclasses, YAML presets with ``base:`` inheritance, overrides.

A config is built in three layers: a preset (a name in ``imf/configs`` or a YAML
path, whose ``base:`` key names the preset it extends), a JSON deep-merge
(``--overrides``), then dotted ``key.path=value`` overrides. Every layer is
checked against the dataclasses below, so an unknown key or a value of the
wrong type is a ``ConfigError`` that names the key, the value and the fix.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from imf.atomic import atomic_write_text
from imf.config_compat import ALIASES, known_elsewhere, upgrade  # noqa: F401 (ALIASES: re-exported)
from imf.config_values import coerce as _coerce
from imf.config_values import parse_scalar as _parse_scalar
from imf.config_values import suggest as _suggest
from imf.errors import ConfigError

PRESET_DIR = Path(__file__).parent / "configs"
OBS_TYPES = ("image", "keypoints")


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
    time_scale: float = 1.0  # the time embedding sees t * time_scale, t in [0, 1] (docs/policy.md)


@dataclass
class ObjectiveConfig:
    name: str = "imf"  # an imf.objectives plugin
    sample_steps: int = 1  # steps at inference (ddpm: its options.steps)
    options: dict[str, Any] = field(default_factory=dict)  # the objective's own (its Options class)


@dataclass
class DataConfig:
    path: str | None = None  # a replay-buffer zarr; None: scripted demos, cached
    demo_episodes: int = 100
    demo_seed: int = 0
    cache_dir: str | None = None  # None: ~/.cache/imf (or $IMF_CACHE)
    val_ratio: float = 0.02
    split_seed: int = 42
    max_train_episodes: int | None = 90


@dataclass
class TrainingConfig:
    seed: int = 42
    device: str = "auto"  # auto, cpu, cuda, cuda:N
    num_epochs: int = 350
    batch_size: int = 64
    lr: float = 1.0e-4
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    weight_decay: float = 1.0e-3
    encoder_weight_decay: float = 1.0e-6
    lr_warmup_steps: int = 1000
    grad_clip: float = 1.0
    use_ema: bool = True
    ema_power: float = 0.75
    ema_max: float = 0.9999
    rollout_every: int = 50
    checkpoint_topk: int = 5
    checkpoint_every: int = 1  # epochs between latest.pt writes (rollout epochs always write)
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


@dataclass
class EvalConfig:
    n_test: int = 50
    test_start_seed: int = 100000
    n_train: int = 6
    train_start_seed: int = 0
    max_steps: int = 300
    legacy: bool = True
    n_workers: int = 0  # 0: one per core, at most 8


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
OPTION_KEYS = ("policy.mask_options", "objective.options", "logging.tracker_options")


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


def _build(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
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
            kwargs[key] = _build(tp, value or {}, f"{dotted}.")
        else:
            kwargs[key] = _coerce(value, tp, dotted)
    return cls(**kwargs)


def _validate(cfg: Config) -> None:
    p = cfg.policy
    positive = {
        "policy.n_emb": p.n_emb, "policy.n_layer": p.n_layer, "policy.n_head": p.n_head,
        "policy.horizon": p.horizon, "policy.n_obs_steps": p.n_obs_steps,
        "policy.n_action_steps": p.n_action_steps, "training.num_epochs": cfg.training.num_epochs,
        "training.batch_size": cfg.training.batch_size, "objective.sample_steps": cfg.objective.sample_steps,
        "training.rollout_every": cfg.training.rollout_every,
        "training.checkpoint_every": cfg.training.checkpoint_every,
        "logging.every_steps": cfg.logging.every_steps,
    }
    positive.update({"policy.action_dim": p.action_dim, "policy.crop_shape": p.crop_shape,
                     "policy.encoder_width": p.encoder_width,
                     "policy.num_keypoints": p.num_keypoints, "policy.image_feature_dim": p.image_feature_dim,
                     "eval.n_test": cfg.eval.n_test, "eval.max_steps": cfg.eval.max_steps})
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"config key '{key}': must be >= 1, got {value}")
    t = cfg.training
    for key, value in (("training.lr", t.lr), ("eval.n_train", cfg.eval.n_train), ("eval.n_workers", cfg.eval.n_workers),
                       ("training.lr_warmup_steps", t.lr_warmup_steps), ("training.weight_decay", t.weight_decay),
                       ("training.encoder_weight_decay", t.encoder_weight_decay),
                       ("training.val_probe_windows", t.val_probe_windows)):
        if value < 0:
            raise ConfigError(f"config key '{key}': must be >= 0, got {value}")
    if len(t.betas) != 2 or not all(0.0 <= b < 1.0 for b in t.betas):
        raise ConfigError(f"config key 'training.betas': two numbers in [0, 1), got {t.betas}")
    for key, value in (("policy.p_drop_attn", p.p_drop_attn), ("policy.p_drop_emb", p.p_drop_emb)):
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"config key '{key}': a dropout probability in [0, 1), got {value}")
    if p.n_emb % p.n_head:
        raise ConfigError(f"config key 'policy.n_head': {p.n_head} must divide policy.n_emb={p.n_emb}")
    if p.n_obs_steps - 1 + p.n_action_steps > p.horizon:
        raise ConfigError(
            f"config key 'policy.horizon': {p.horizon} is shorter than n_obs_steps - 1 + "
            f"n_action_steps = {p.n_obs_steps - 1 + p.n_action_steps}")
    if not (t.num_workers == "auto" or t.num_workers.isdigit()):
        raise ConfigError(f"config key 'training.num_workers': got {t.num_workers!r}, allowed: auto "
                          f"or a number >= 0")
    if cfg.training.budget_clock not in ("wall", "cpu"):
        raise ConfigError(f"config key 'training.budget_clock': got {cfg.training.budget_clock!r}, "
                          f"allowed: wall, cpu")
    if cfg.training.time_budget_s is not None and not cfg.training.time_budget_s > 0:
        raise ConfigError(f"config key 'training.time_budget_s': must be > 0 (or null), "
                          f"got {cfg.training.time_budget_s}")
    if p.obs_type not in OBS_TYPES:
        raise ConfigError(f"config key 'policy.obs_type': got {p.obs_type!r}, allowed: {', '.join(OBS_TYPES)}")
    if p.encoder not in ("resnet18", "small"):
        raise ConfigError(f"config key 'policy.encoder': got {p.encoder!r}, allowed: resnet18, small")
    if not 0.0 <= cfg.data.val_ratio < 1.0:
        raise ConfigError(f"config key 'data.val_ratio': must be in [0, 1), got {cfg.data.val_ratio}")


# ---------------------------------------------------------------- presets and merging

def list_presets() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def _read_yaml(path: Path) -> dict[str, Any]:
    """The file's mapping (a fresh copy each call: callers merge into it)."""
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is None:
        return _parse_yaml(path, path.read_text())  # raises the OSError a caller reports
    return copy.deepcopy(_read_yaml_cached(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _read_yaml_cached(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """Parsed once per version of the file: a sweep of 10,000 trials builds 10,000 configs
    from one preset (the key is the file's mtime and size, so an edited file is read again)."""
    return _parse_yaml(Path(path), Path(path).read_text())


def _parse_yaml(path: Path, text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: top level must be a mapping, got {type(data).__name__}")
    return data


def _resolve_preset_path(name_or_path: str, relative_to: Path | None = None) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if relative_to is not None and not candidate.is_absolute():
            local = relative_to / candidate
            if local.exists():
                return local
        if candidate.exists():
            return candidate
        shipped = PRESET_DIR / candidate.name
        if shipped.exists():
            return shipped
        raise ConfigError(f"config file '{name_or_path}' does not exist")
    shipped = PRESET_DIR / f"{name_or_path}.yaml"
    if shipped.exists():
        return shipped
    presets = list_presets()
    raise ConfigError(
        f"unknown preset '{name_or_path}'{_suggest(name_or_path, presets)}; "
        f"presets: {', '.join(presets)}; or give a path to a .yaml file")


def load_preset_dict(name_or_path: str, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """A preset as a nested dict with its ``base:`` chain merged in (child wins)."""
    path = _resolve_preset_path(name_or_path, Path(_seen[-1]).parent if _seen else None)
    if str(path.resolve()) in _seen:
        raise ConfigError(f"config file {path}: 'base:' chain loops back to itself")
    data = _read_yaml(path)
    base = data.pop("base", None)
    if base is None:
        return data
    parent = load_preset_dict(str(base), _seen + (str(path.resolve()),))
    return deep_merge(parent, data)


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_json_overrides(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--overrides is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--overrides must be a JSON object, got {type(data).__name__}")
    return data


def is_config_key(key: str) -> bool:
    """A dotted key an override or grid may set: ours, an old or foreign spelling, or one
    option of a plugin (``objective.options.tangent``; the plugin checks it)."""
    if key in known_elsewhere() or key in all_keys():
        return True
    return any(key.startswith(f"{k}.") and len(key) > len(k) + 1 for k in OPTION_KEYS)


def dotted_to_nested(overrides: list[str]) -> dict[str, Any]:
    """``["policy.n_emb=256"]`` -> ``{"policy": {"n_emb": 256}}`` (values still raw)."""
    nested: dict[str, Any] = {}
    known = set(all_keys()) | known_elsewhere()
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override '{item}': expected key.path=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not is_config_key(key):
            raise ConfigError(f"unknown config key '{key}'{_suggest(key, sorted(known))}")
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = _parse_scalar(raw) if raw.strip() else ""
    return nested


def from_dict(data: dict[str, Any]) -> Config:
    cfg = _build(Config, upgrade(data))
    _validate(cfg)
    return cfg


def load_config(preset: str | None = "smoke", overrides: list[str] | None = None,
                json_overrides: str | dict[str, Any] | None = None) -> Config:
    """Preset (name or YAML path) + JSON deep-merge + dotted overrides -> checked Config."""
    data = load_preset_dict(preset) if preset else {}
    if json_overrides:
        extra = parse_json_overrides(json_overrides) if isinstance(json_overrides, str) else json_overrides
        data = deep_merge(upgrade(data), upgrade(extra))
    if overrides:
        data = deep_merge(upgrade(data), upgrade(dotted_to_nested(overrides)))
    return from_dict(data)


def load_resolved(path: str | Path) -> Config:
    """Read back a config written by ``Config.save`` (no ``base:`` chain)."""
    return from_dict(_read_yaml(Path(path)))


def split_config_args(args: list[str]) -> tuple[str | None, list[str]]:
    """``[CONFIG] [key=value ...]`` -> (preset or None, dotted overrides)."""
    if args and "=" not in args[0]:
        return args[0], list(args[1:])
    return None, list(args)
