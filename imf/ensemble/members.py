"""Which checkpoints an ensemble is made of: a run's top-k files, or a sweep's best runs.

A run folder gives its top-k checkpoints (``checkpoints/epoch=NNNN-test_mean_score=S.pt``),
best score first; a sweep folder (or any folder of runs) gives each run's best.pt, best run
first. The ensemble is recorded beside the runs: in the run's parent folder, or in the sweep.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imf.errors import EnsembleError
from imf.store import (CHECKPOINTS, CONFIG, ENSEMBLES, RunLayout, ensemble_id, find_run_dirs, is_run_dir,
                       read_summary, read_yaml_mapping)

MODES = ("weights", "actions")


@dataclass(frozen=True)
class Member:
    trial: str  # the trial id of the run it comes from
    checkpoint: Path
    score: float  # the test_mean_score it was selected by
    epoch: int | None  # 0-based, as logs.json.txt and the checkpoint keep it
    # its run's policy settings and objective (config.yaml), what a weight soup must share
    architecture: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Selection:
    id: str  # the ensemble's scoreboard id
    source: Path
    kind: str  # "run" (its top-k checkpoints) or "sweep" (its runs' best checkpoints)
    members: list[Member]
    root: Path  # where its scoreboard is, and where ensembles/ goes

    def default_out(self) -> Path:
        return self.root / ENSEMBLES / f"{self.id}.pt"


def first_difference(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> str | None:
    """The first key (sorted) whose values differ, as ``KEY A vs B``; None when none does."""
    for key in sorted(set(a) | set(b)):
        if json.dumps(a.get(key), sort_keys=True) != json.dumps(b.get(key), sort_keys=True):
            return f"{prefix}{key} {a.get(key)!r} vs {b.get(key)!r}"
    return None


def check_request(top: int, mode: str) -> None:
    """--top and --mode, before any file is read."""
    if mode not in MODES:
        raise EnsembleError(f"--mode {mode}: unknown ensemble mode; allowed: {', '.join(MODES)}")
    if top < 2:
        raise EnsembleError(f"--top {top}: an ensemble needs 2 or more members; give --top 2 or more")


def select(source: Path, top: int, mode: str) -> Selection:
    """The ``top`` best members of ``source`` (a run folder or a folder of runs)."""
    check_request(top, mode)
    source = Path(source)
    if not source.is_dir():
        what = "does not exist" if not source.exists() else "is not a folder"
        raise EnsembleError(f"ensemble source {source} {what}; give a run folder (its top-k "
                            "checkpoints) or a sweep folder (its runs' best checkpoints)")
    if is_run_dir(source):
        name, kind, found = _trial_id(source), "run", run_members(source)
        root, what = source.resolve().parent, f"top-k checkpoints in {source / CHECKPOINTS}"
    else:
        name, kind, found = source.resolve().name, "sweep", sweep_members(source)
        root, what = source.resolve(), f"runs with a best checkpoint under {source}"
        if mode == "weights" and found:  # a soup of the best runs of the best run's architecture
            found = _same_architecture(found, top, source)
    if len(found) < 2:
        raise EnsembleError(f"ensemble source {source} has {len(found)} {what}; an ensemble "
                            "needs 2 or more")
    if len(found) < top:
        raise EnsembleError(f"--top {top}: {source} has only {len(found)} {what}; give --top "
                            f"{len(found)} or fewer")
    return Selection(ensemble_id(name, top, mode), source, kind, found[:top], root)


def _same_architecture(found: list[Member], top: int, source: Path) -> list[Member]:
    best = found[0]
    same = [m for m in found if first_difference(m.architecture, best.architecture) is None]
    if len(same) < min(top, len(found)):
        other = next(m for m in found if m not in same)
        fix = (f"give --top {len(same)} or fewer, or use --mode actions" if len(same) >= 2 else
               "a weight soup needs 2 or more runs of one architecture: use --mode actions")
        raise EnsembleError(
            f"--mode weights: {len(same)} of the runs under {source} (the best run {best.trial} "
            f"included) share its architecture; {other.trial} and the others differ in "
            f"architecture ({first_difference(best.architecture, other.architecture)}); {fix}")
    return same


def architecture(run_dir: Path) -> dict[str, Any]:
    """The run's policy settings and objective name, from its config.yaml."""
    config = read_yaml_mapping(run_dir / CONFIG)
    policy = config.get("policy") if isinstance(config.get("policy"), dict) else {}
    objective = config.get("objective") if isinstance(config.get("objective"), dict) else {}
    return {**{f"policy.{k}": v for k, v in policy.items()}, "objective.name": objective.get("name")}


def _trial_id(run_dir: Path) -> str:
    summary = read_summary(run_dir)
    return summary.id if summary is not None and summary.id else run_dir.resolve().name


def run_members(run_dir: Path) -> list[Member]:
    """The run's top-k checkpoint files, best score first (the earlier epoch first on a tie)."""
    trial = _trial_id(run_dir)
    found = []
    for path, epoch, score in RunLayout(run_dir).topk_files():
        if path.is_file():
            found.append(Member(trial, path, score, epoch))
    return sorted(found, key=lambda m: (-m.score, m.epoch))


def sweep_members(folder: Path) -> list[Member]:
    """Each run's best checkpoint under ``folder``, best run first (then by trial id)."""
    found = []
    for run_dir in find_run_dirs(folder):
        summary = read_summary(run_dir)
        if summary is None or summary.best_score is None or not summary.checkpoints.best:
            continue
        path = run_dir / summary.checkpoints.best
        if path.is_file():
            found.append(Member(summary.id or run_dir.name, path, summary.best_score,
                                summary.best_epoch, architecture(run_dir)))
    return sorted(found, key=lambda m: (-m.score, m.trial))
