"""Config keys from elsewhere: Diffusion Policy's spellings, and keys imf no longer has.

Two things, kept apart:

- ``ALIASES``: a feature. Diffusion Policy's ``policy.causal_attn`` is accepted wherever a key
  is (a preset, ``--overrides``, ``key=value``, a sweep's grid) and means ``policy.mask``.
- ``STORED``: the config as a kind of file (imf/upgrade.py), with one named step per change of
  its keys. Run folders and checkpoints keep the config they were made with, and a preset or an
  override written for an older imf is such a document too, so every config layer is read
  through it: a removed key still loads when it holds the value that imf now always uses (any
  other value is an error that says what replaced it), the built-in objectives' old knobs
  (``objective.time_mu``) move into ``objective.options``, ``logging.swanlab`` into the
  trackers. A config keeps no version (its keys are the schema's), so the steps run on every
  read and leave today's keys as they are; ``imf.config.load_resolved`` writes a run folder's
  upgraded config.yaml back once, a checkpoint's config is upgraded in memory only.
"""
from __future__ import annotations

from typing import Any

from imf.config.values import coerce
from imf.errors import ConfigError
from imf.upgrade import FileKind, Step

# Familiar spellings from Diffusion Policy that map onto one of our keys.
ALIASES = {"policy.causal_attn": "policy.mask"}

# key -> (the only value old files may hold, what to do instead)
REMOVED: dict[str, tuple[Any, str]] = {
    "training.resume": (False, "resume a run with `imf trial --resume RUN_DIR`"),
    "policy.image_size": (96, "observations are the PushT renderer's 96x96 images"),
    "logging.metric": ("test_mean_score", "checkpoints are always ranked by test_mean_score"),
}

# old objective.<key> -> (its name in objective.options, the built-in objectives that take it)
_MEAN_FLOWS = frozenset({"imf", "meanflow"})
MOVED_TO_OPTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "time_mu": ("time_mu", _MEAN_FLOWS | {"flow"}),
    "time_sigma": ("time_sigma", _MEAN_FLOWS | {"flow"}),
    "equal_time_ratio": ("equal_time_ratio", _MEAN_FLOWS),
    "adaptive_p": ("adaptive_p", _MEAN_FLOWS),
    "adaptive_c": ("adaptive_c", _MEAN_FLOWS),
    "tangent": ("tangent", frozenset({"imf"})),
    "ddpm_steps": ("steps", frozenset({"ddpm"})),
    "ddpm_beta_schedule": ("beta_schedule", frozenset({"ddpm"})),
    "ddpm_clip_sample": ("clip_sample", frozenset({"ddpm"})),
}


def _move_objective_knobs(data: dict[str, Any]) -> dict[str, Any]:
    """Old ``objective.<knob>`` keys into ``objective.options``. A layer that names its
    objective (a saved config.yaml names it and carries every knob) keeps only that
    objective's; a layer without a name keeps all and the objective's Options checks them."""
    section = data.get("objective")
    if not isinstance(section, dict) or not set(section) & set(MOVED_TO_OPTIONS):
        return data
    section, name = dict(section), section.get("name")
    options = dict(section.get("options") or {})
    for old, (new, takers) in MOVED_TO_OPTIONS.items():
        if old in section:
            value = section.pop(old)
            if name is None or name in takers:
                options.setdefault(new, value)
    return {**data, "objective": {**section, "options": options}}


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


def _move_tracker_keys(data: dict[str, Any]) -> dict[str, Any]:
    """``logging.swanlab: false`` -> no trackers (true: swanlab); ``logging.swanlab_mode`` ->
    the swanlab tracker's ``mode`` option (trackers became plugins)."""
    section = data.get("logging")
    if not isinstance(section, dict) or not {"swanlab", "swanlab_mode"} & set(section):
        return data
    section = dict(section)
    if "swanlab" in section:
        on = coerce(section.pop("swanlab"), bool, "logging.swanlab")
        section.setdefault("trackers", ["swanlab"] if on else [])
    if "swanlab_mode" in section:
        options = dict(section.get("tracker_options") or {})
        options["swanlab"] = {**(options.get("swanlab") or {}), "mode": section.pop("swanlab_mode")}
        section["tracker_options"] = options
    return {**data, "logging": section}


STORED = FileKind("config", (
    Step(1, "removed keys dropped (" + ", ".join(REMOVED) + ")", _drop_removed),
    Step(2, "objective knobs moved into objective.options", _move_objective_knobs),
    Step(3, "logging.swanlab and logging.swanlab_mode became logging.trackers and tracker_options",
         _move_tracker_keys),
), key="")


def with_aliases(data: dict[str, Any]) -> dict[str, Any]:
    """Aliases mapped onto our keys (a new dict; ``data`` is kept)."""
    for alias, target in ALIASES.items():
        section, key = alias.split(".")
        sub = data.get(section)
        if isinstance(sub, dict) and key in sub:
            sub = dict(sub)
            sub[target.split(".")[1]] = _alias_value(alias, sub.pop(key))
            data = {**data, section: sub}
    return data


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """One config layer with today's keys: aliases mapped, then the stored config's steps (a new
    dict; ``data`` is kept)."""
    return STORED.upgrade(with_aliases(data))


def known_elsewhere() -> set[str]:
    """Dotted keys that are not ours but that ``upgrade`` understands."""
    return set(ALIASES) | set(REMOVED) | {f"objective.{key}" for key in MOVED_TO_OPTIONS} \
        | {"logging.swanlab", "logging.swanlab_mode"}
