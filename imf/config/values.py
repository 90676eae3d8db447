"""Checking and converting config values: the type rules behind every override."""
from __future__ import annotations

import copy
import difflib
import functools
import math
from typing import Any

import yaml

from imf.errors import ConfigError
from imf.typed import Kind, kind_of


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def coerce(value: Any, tp: Any, key: str) -> Any:
    """Return ``value`` as type ``tp`` or raise a ConfigError naming ``key``."""
    try:
        kind = kind_of(tp)
    except TypeError:
        raise ConfigError(f"config key '{key}': unsupported type {_type_name(tp)}") from None
    return _coerce(value, kind, key)


def coerce_finite(value: Any, tp: Any, key: str) -> Any:
    """``coerce``, a float (or a list's float) also refused when nan or inf: a plugin's option,
    whose own range its Options class checks (the core keys' ranges: imf/config/ranges.py)."""
    out = coerce(value, tp, key)
    for item in out if isinstance(out, list) else [out]:
        if isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(f"config key '{key}': must be a finite number, got {out}")
    return out


def coerce_kind(value: Any, kind: Kind, key: str) -> Any:
    """``coerce`` for a kind already worked out (``imf.config.key_kind``)."""
    return _coerce(value, kind, key)


def _coerce(value: Any, kind: Kind, key: str) -> Any:
    if kind.optional and (value is None or isinstance(value, str) and value.lower() in ("null", "none")):
        return None
    tp = kind.base
    if tp is list and kind.item is not None:
        if isinstance(value, str):
            value = parse_scalar(value)
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key '{key}': expected a list, got {value!r}")
        return [_coerce(v, kind.item, f"{key}[{i}]") for i, v in enumerate(value)]
    if tp is dict:  # a plugin's options: the plugin checks the values
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"config key '{key}': expected a mapping of names to values, got {value!r}")
        return dict(value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "yes", "1", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("false", "no", "0", "off"):
            return False
        raise ConfigError(f"config key '{key}': expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, bool):
            raise ConfigError(f"config key '{key}': expected an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise ConfigError(f"config key '{key}': expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"config key '{key}': expected a number, got {value!r}")
    if tp is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"config key '{key}': expected a string, got {value!r}")
    raise ConfigError(f"config key '{key}': unsupported type {_type_name(tp)}")


def parse_scalar(text: str) -> Any:
    """Parse the right-hand side of ``key=value`` the way YAML would (safely)."""
    value = _parse_scalar(text)
    return copy.deepcopy(value) if isinstance(value, (list, dict)) else value


@functools.lru_cache(maxsize=4096)
def _parse_scalar(text: str) -> Any:
    """Cached: a sweep's grid repeats a few values over thousands of trials."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def suggest(key: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""
