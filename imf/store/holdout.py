"""``<run>/holdout.json``: every look at the holdout seeds, appended, never rewritten.

A number read on the holdout is a claim only while nothing was chosen by it: each look is kept
(when, which checkpoint, n, mean ± SE, success ± SE), so the report can say how often a run was
looked at, and that the best of several looks is a selection again.

    {"version": 1, "looks": [{"time", "checkpoint", "epoch", "trial", "episodes", "seed_start",
                              "mean", "se", "success_rate", "success_se", "per_seed",
                              "per_seed_success"}, ...]}
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_json
from imf.store.layout import CHECKPOINTS, HOLDOUT, SNAPSHOTS
from imf.store.runs import read_json_object

VERSION = 1
LOOK_NUMBERS = ("episodes", "seed_start", "mean", "se", "success_rate", "success_se")


def is_curve_look(look: dict[str, Any]) -> bool:
    """A look at a kept snapshot (checkpoints/snapshots/): a point of a score-against-samples
    curve (benchmarks/learning/samples_to_threshold.py), never the run's claim."""
    return str(look.get("checkpoint", "")).startswith(f"{CHECKPOINTS}/{SNAPSHOTS}/")


@dataclass(frozen=True)
class Looks:
    """What a run's holdout.json says: its looks (oldest first), and the file if one was read.
    ``latest`` and ``checkpoints`` are the claim's looks; ``curve`` the snapshots'."""
    looks: list[dict[str, Any]]
    path: Path | None = None

    @property
    def latest(self) -> dict[str, Any] | None:
        claims = [look for look in self.looks if not is_curve_look(look)]
        return claims[-1] if claims else None

    @property
    def checkpoints(self) -> set[str]:
        return {str(look.get("checkpoint")) for look in self.looks if not is_curve_look(look)}

    @property
    def curve(self) -> list[dict[str, Any]]:
        return [look for look in self.looks if is_curve_look(look)]


def _is_look(look: Any) -> bool:
    return isinstance(look, dict) and all(
        isinstance(look.get(k), (int, float)) and not isinstance(look.get(k), bool)
        and math.isfinite(look[k]) for k in ("mean", "episodes"))


def read_looks(run_dir: Path) -> Looks:
    """The looks of ``run_dir``; ValueError naming the file when it is there but unreadable."""
    path = Path(run_dir) / HOLDOUT
    if not path.is_file():
        return Looks([])
    data = read_json_object(path)
    looks = data.get("looks")
    if not isinstance(looks, list) or not all(_is_look(look) for look in looks):
        raise ValueError(f"{path}: 'looks' is not a list of looks with a mean and episodes")
    return Looks(looks, path)


def append_look(run_dir: Path, look: dict[str, Any]) -> int:
    """Add one look to ``run_dir``/holdout.json (write-then-rename); the number of looks now.
    An unreadable holdout.json is refused (ValueError), never overwritten: it is the record."""
    looks = read_looks(run_dir).looks
    atomic_write_json(Path(run_dir) / HOLDOUT, {"version": VERSION, "looks": [*looks, look]})
    return len(looks) + 1
