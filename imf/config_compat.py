"""Config keys from elsewhere: Diffusion Policy's spellings, and keys imf no longer has.

Run folders and checkpoints keep the config they were made with, so a removed key still
loads when it holds the value that imf now always uses; any other value is an error that
says what replaced it.
"""
from __future__ import annotations

from typing import Any

from imf.config_values import coerce
from imf.errors import ConfigError

# Familiar spellings from Diffusion Policy that map onto one of our keys.
ALIASES = {"policy.causal_attn": "policy.mask"}

# key -> (the only value old files may hold, what to do instead)
REMOVED: dict[str, tuple[Any, str]] = {
    "training.resume": (False, "resume a run with `imf trial --resume RUN_DIR`"),
    "policy.image_size": (96, "observations are the PushT renderer's 96x96 images"),
    "logging.metric": ("test_mean_score", "checkpoints are always ranked by test_mean_score"),
}


def _alias_value(alias: str, value: Any) -> Any:
    if alias == "policy.causal_attn":
        return "causal" if coerce(value, bool, alias) else "full"
    return value


def _drop_removed(data: dict[str, Any]) -> dict[str, Any]:
    for dotted, (kept, instead) in REMOVED.items():
        section, key = dotted.split(".")
        sub = data.get(section)
        if not isinstance(sub, dict) or key not in sub:
            continue
        if sub[key] != kept:
            raise ConfigError(f"config key '{dotted}' was removed ({instead}); "
                              f"got {sub[key]!r}, only {kept!r} is still accepted from old files")
        data = {**data, section: {k: v for k, v in sub.items() if k != key}}
    return data


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Aliases mapped onto our keys and removed keys dropped (a new dict; ``data`` is kept)."""
    for alias, target in ALIASES.items():
        section, key = alias.split(".")
        sub = data.get(section)
        if isinstance(sub, dict) and key in sub:
            sub = dict(sub)
            sub[target.split(".")[1]] = _alias_value(alias, sub.pop(key))
            data = {**data, section: sub}
    return _drop_removed(data)


def known_elsewhere() -> set[str]:
    """Dotted keys that are not ours but that ``upgrade`` understands."""
    return set(ALIASES) | set(REMOVED)
