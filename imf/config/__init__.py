"""Typed configuration: dataclasses, YAML presets with ``base:`` inheritance, overrides.

A config is built in three layers: a preset (a name in ``imf/configs`` or a YAML
path, whose ``base:`` key names the preset it extends), a JSON deep-merge
(``--overrides``), then dotted ``key.path=value`` overrides. Every layer is
checked against the dataclasses below, so an unknown key or a value of the
wrong type is a ``ConfigError`` that names the key, the value and the fix.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from imf.atomic import atomic_write_text
from imf.config.compat import ALIASES, STORED, known_elsewhere, upgrade, with_aliases
from imf.config.eval_seeds import RECOMMENDED_EPISODES, check_episodes, final_eval_seeds, holdout_seeds
from imf.config.presets import (DEFAULT_PRESET, FULL_ATTENTION_PRESET, FULL_MASK, PRESET_DIR, StrictLoader, deep_merge,
                                list_presets, load_preset_dict, mask_overrides, mask_preset, preset_base, read_yaml)
from imf.config.schema import (MAX_TRAIN_CAP, OBS_TYPES, OPTION_KEYS, Config, DataConfig, EvalConfig,
                               LoggingConfig, ObjectiveConfig, PolicyConfig, SweepConfig, TrainingConfig,
                               all_keys, build, check_value, key_kind, validate)
from imf.config.trainer import (BUILTIN_TRAINER, RUN_ONLY_WORDS, STDOUT, MetricSpec, ProgramConfig, check_final_eval,
                                flat_params, load_program_config, param_value, trainer_name)
from imf.config.values import coerce_finite, coerce_kind, parse_scalar, suggest
from imf.config.values import parse_scalar as _parse_scalar
from imf.config.values import suggest as _suggest
from imf.errors import ConfigError
from imf.upgrade import write_back

__all__ = ["MAX_TRAIN_CAP", "OBS_TYPES", "OPTION_KEYS", "PRESET_DIR", "Config", "DataConfig", "EvalConfig",
           "LoggingConfig", "ObjectiveConfig", "PolicyConfig", "SweepConfig", "TrainingConfig", "all_keys",
           "check_value", "deep_merge", "dotted_to_nested", "from_dict", "is_config_key", "key_kind", "list_presets",
           "load_config", "load_preset_dict", "preset_base", "load_resolved", "parse_json_overrides", "split_config_args",
           # the sweep's and the CLI's preset names and mask presets; stored configs of earlier versions
           "ALIASES", "DEFAULT_PRESET", "FULL_ATTENTION_PRESET", "FULL_MASK", "StrictLoader", "mask_overrides",
           "mask_preset", "STORED", "read_yaml", "upgrade", "with_aliases", "known_elsewhere",
           # the evaluation seeds a config asks for
           "RECOMMENDED_EPISODES", "check_episodes", "final_eval_seeds", "holdout_seeds",
           # a trainer program's config (``trainer:``) and the trial parameters it reports
           "BUILTIN_TRAINER", "RUN_ONLY_WORDS", "STDOUT", "MetricSpec", "ProgramConfig", "check_final_eval",
           "flat_params", "load_program_config", "param_value", "trainer_name",
           # value rules shared with the registry's plugin options
           "coerce_finite", "coerce_kind", "parse_scalar", "suggest"]


def _object_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once (json.loads keeps the last silently)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ConfigError(f"--overrides: key '{key}' is given twice in one object; keep one")
        data[key] = value
    return data


def parse_json_overrides(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text, object_pairs_hook=_object_once)
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
    cfg = build(Config, upgrade(data))
    validate(cfg)
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
    """Read back a config written by ``Config.save`` (no ``base:`` chain). One an older imf wrote
    (keys imf no longer has: ``compat.STORED``) is written back with today's keys once, atomically,
    and a line on stderr names what changed; a file this process may not write stays as it was
    (the upgrade then holds in memory only)."""
    path = Path(path)
    data = with_aliases(read_yaml(path))
    read = STORED.read(data)
    cfg = from_dict(read.data)
    if read.changed:
        write_back(path, read.note(STORED, path),
                   lambda p: atomic_write_text(p, yaml.safe_dump(read.data, sort_keys=False)))
    return cfg


def split_config_args(args: list[str]) -> tuple[str | None, list[str]]:
    """``[CONFIG] [key=value ...]`` -> (preset or None, dotted overrides)."""
    if args and "=" not in args[0]:
        return args[0], list(args[1:])
    return None, list(args)
