"""Plugin-owned options: a plugin declares a dataclass, the config holds a mapping of it.

A mask function or an objective class may carry ``Options``: a dataclass whose fields have
types and defaults. The config keeps the plugin's settings under ``policy.mask_options`` or
``objective.options``; ``resolve`` checks that mapping against the dataclass (unknown keys
get the core config's "did you mean" error, values are coerced to the field types) and the
dataclass's ``__post_init__`` may refuse a value with ``imf.errors.OptionError``.
"""
from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

from imf import registry
from imf.config import coerce_finite, suggest
from imf.errors import ConfigError, OptionError

# where the options live in the config -> (plugin group, config section, key of the plugin's name)
PLACES = {
    "policy.mask_options": ("imf.masks", "policy", "mask"),
    "objective.options": ("imf.objectives", "objective", "name"),
    "data.curriculum_options": ("imf.curricula", "data", "curriculum"),
}


def options_class(plugin: Any) -> type | None:
    cls = getattr(plugin, "Options", None)
    return cls if dataclasses.is_dataclass(cls) else None


def resolve(plugin: Any, raw: dict[str, Any] | None, where: str, label: str) -> Any:
    """The plugin's ``Options`` instance from the config mapping ``raw`` at ``where``
    (None for a plugin without options, which then must be given none)."""
    raw = dict(raw or {})
    cls = options_class(plugin)
    if cls is None:
        if raw:
            raise ConfigError(f"config key '{where}': {label} takes no options, got {', '.join(sorted(raw))}")
        return None
    hints = _hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    values = {}
    for key, value in raw.items():
        if key not in names:
            raise ConfigError(f"unknown config key '{where}.{key}' for {label}"
                              f"{suggest(f'{where}.{key}', [f'{where}.{n}' for n in names])}; "
                              f"its options: {', '.join(names)}")
        values[key] = coerce_finite(value, hints[key], f"{where}.{key}")  # nan, inf: never
    try:
        return cls(**values)
    except OptionError as exc:
        raise ConfigError(f"config key '{where}.{exc.key}': {exc.message}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"config key '{where}' ({label}): {exc}") from None


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def as_dict(options: Any) -> dict[str, Any]:
    return dataclasses.asdict(options) if options is not None else {}


def plugin_and_options(cfg: Any, where: str) -> tuple[Any, Any]:
    """(plugin object, its resolved options) for ``where`` in ``PLACES``."""
    group, section, name_key = PLACES[where]
    part = getattr(cfg, section)
    name = getattr(part, name_key)
    plugin = registry.get(group, name)
    kind = registry.kind_of(group)
    return plugin, resolve(plugin, getattr(part, where.split(".", 1)[1]), where, f"{kind} '{name}'")


def fill_options(cfg: Any) -> None:
    """Check every plugin's options in ``cfg`` and write the full values (defaults included)
    back, so config.yaml and the checkpoint record what the run used. A plugin with
    ``check_config`` is asked, too, whether it honours the rest of its config section."""
    for where in PLACES:
        plugin, options = plugin_and_options(cfg, where)
        section, key = where.split(".", 1)
        setattr(getattr(cfg, section), key, as_dict(options))
        check_config = getattr(plugin, "check_config", None)
        if callable(check_config):
            check_config(getattr(cfg, section))
