"""What every claims passage is made of: the committed JSON (Data), its typed error, and the
numbers' wording (a value with its SE, a gap with its z and whether it is beyond 1.96 SE)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

Z = 1.96


# pusht_lowdim_cpu's settings before issue #47 changed them (660380f): what the passages of its
# earlier runs say they ran at
KEYPOINTS_BEFORE_47 = "the boundary tangent, batch 128, EMA capped at 0.9999"


class ClaimError(Exception):
    """A passage cannot be written or checked: a JSON file, a run or a marker is missing."""


class Data:
    """The JSON under ``root``/benchmarks/learning_results, loaded on first use."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "benchmarks" / "learning_results"
        self._files: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._files:
            path = self.folder / f"{name}.json"
            if not path.is_file():
                raise ClaimError(f"{path} is missing: its passages cannot be written")
            self._files[name] = json.loads(path.read_text())
        return self._files[name]

    def run(self, name: str, objective: str, seed: int) -> dict[str, Any]:
        found = [r for r in self[name] if r.get("objective") == objective and r.get("seed") == seed]
        if len(found) != 1 or "holdout_score" not in found[0]:
            raise ClaimError(f"{self.folder / name}.json: expected one {objective} run of training seed "
                             f"{seed} with a holdout look, found {len(found)}")
        return found[0]

    def seeds(self, name: str, objective: str = "imf") -> list[int]:
        """The training seeds of ``objective``'s runs; for imf (every passage's subject) at least one."""
        seeds = sorted({r["seed"] for r in self[name] if r.get("objective") == objective})
        if not seeds and objective == "imf":
            raise ClaimError(f"{self.folder / name}.json holds no imf run with its objective and seed")
        return seeds


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def coverage_success(run: dict[str, Any], prefix: str = "holdout") -> str:
    return (f"{run[f'{prefix}_score']:.3f} ± {run[f'{prefix}_score_se']:.3f} coverage, "
            f"{pct(run[f'{prefix}_success'])} ± {100 * run[f'{prefix}_success_se']:.1f} success")


def gap(a: dict[str, Any], b: dict[str, Any], key: str, points: bool = False,
        seeds: str = "holdout") -> tuple[str, bool]:
    """a - b on ``seeds`` with its SE and z; whether it is beyond 1.96 SE."""
    diff = a[f"{seeds}_{key}"] - b[f"{seeds}_{key}"]
    se = math.hypot(a[f"{seeds}_{key}_se"], b[f"{seeds}_{key}_se"])
    z = diff / se if se > 0 else (0.0 if diff == 0 else math.inf)
    scale, unit, digits = (100, " points", 1) if points else (1, "", 3)
    return f"{scale * diff:+.{digits}f} ± {scale * se:.{digits}f}{unit} (z {z:+.2f})", abs(z) > Z


def preset(data: Data, name: str) -> dict[str, Any]:
    """A shipped preset's own YAML (its keys as written, without its base)."""
    return yaml.safe_load((data.folder.parents[1] / "imf" / "configs" / f"{name}.yaml").read_text())


def cpu_minutes(run: dict[str, Any]) -> float:
    """A run's training CPU-minutes: its budget on the cpu clock, or, for a run sized by samples
    (no budget), the CPU-minutes it spent."""
    return run["budget_s"] / 60 if run.get("budget_s") else run["train_min"]
