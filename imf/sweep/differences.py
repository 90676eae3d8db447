"""What a sweep's trials change, for its dry run: the settings every trial shares that differ from
the preset its config builds on (``--mask full``'s preset sets n_head 1, say), then each trial's
own. A reader sees what moved before anything runs."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from imf.config import BUILTIN_TRAINER, load_config, load_program_config, preset_base, trainer_name
from imf.errors import ConfigError
from imf.registry import fill_options
from imf.store import differences, run_only
from imf.sweep.state import SweepState, TrialState


def _reference(config: str) -> str:
    """The preset ``config`` builds on (its ``base:``), else ``config`` itself."""
    base = preset_base(config)
    if base is None:
        return config
    if base.endswith((".yaml", ".yml")) and Path(config).suffix in (".yaml", ".yml"):
        return str((Path(config).parent / base))  # a base path is relative to its file
    return base


def _resolved(config: str, overrides: list[str]) -> dict[str, Any]:
    if trainer_name(config) != BUILTIN_TRAINER:  # a trainer's program config (docs/trainers.md)
        return load_program_config(config, overrides).to_dict()
    cfg = load_config(config, overrides)
    fill_options(cfg)
    return cfg.to_dict()


def _shown(diff: tuple[str, Any, Any]) -> str:
    key, old, new = diff
    return f"{key} {old!r} -> {new!r}"


def difference_lines(state: SweepState) -> list[str]:
    """The dry run's lines: shared differences from the reference preset, then per trial."""
    try:
        reference = _reference(state.config)
        base = _resolved(reference, [])
    except ConfigError as exc:
        return [f"differences: not shown ({exc})"]
    per_trial: dict[str, list[tuple[str, Any, Any]]] = {}
    for trial in state.trials:
        mine = _resolved(state.config, _trial_overrides(state, trial))
        per_trial[trial.id] = [d for d in differences(mine, base) if not run_only(d[0])]
    shared = set.intersection(*(set(map(_shown, d)) for d in per_trial.values())) if per_trial else set()
    lines = [f"every trial differs from preset {reference} in: "
             + (", ".join(sorted(shared)) if shared else "nothing")]
    for tid, diffs in per_trial.items():
        own = [text for text in map(_shown, diffs) if text not in shared]
        lines.append(f"    {tid} also: " + (", ".join(own) if own else "(nothing more)"))
    return lines


def _trial_overrides(state: SweepState, trial: TrialState) -> list[str]:
    if trainer_name(state.config) != BUILTIN_TRAINER:  # a program's seed is its own flag, not a param
        return [*state.overrides, *trial.overrides]
    return [*state.overrides, *trial.overrides, f"training.seed={trial.seed}",
            f"training.num_epochs={trial.epochs}"]
