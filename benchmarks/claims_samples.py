"""The samples passage of benchmarks/claims.py: training samples until the holdout curve first
reaches a coverage and a success threshold, from benchmarks/learning_results/samples_to_threshold.json."""
from __future__ import annotations

from typing import Any


def _reached(curve: dict[str, Any], test) -> str:
    """When ``test`` first held on the curve, and whether every later point held too."""
    points = curve["points"]
    first = next((i for i, p in enumerate(points) if test(p)), None)
    if first is None:
        last = points[-1]
        return f"not reached in {last['samples'] / 1e6:.2f}M"
    later = points[first + 1:]
    held = ("the last point" if not later else
            "held at every later point" if all(test(p) for p in later) else
            f"below it again at {sum(not test(p) for p in later)} of the {len(later)} later points")
    return f"{points[first]['samples'] / 1e6:.2f}M ({held})"


def samples_lines(data) -> list[str]:
    """One line per curve: samples to each threshold; then the quoted reference."""
    found = data["samples_to_threshold"]
    cov, suc = found["thresholds"]["coverage"], found["thresholds"]["success"]
    lines = [f"Training samples (steps x batch: the same on any device) until a run's holdout curve "
             f"first reached {cov:.2f} coverage, {100 * suc:.0f}% success, and both "
             f"(benchmarks/samples_to_threshold.py: evenly spread snapshots of each run, each scored "
             f"once on {found['curves'][0]['episodes']} holdout seeds; nothing was chosen by them):"]
    for c in found["curves"]:
        last = c["points"][-1]
        lines.append(
            f"- {c['label']} ({c['budget_s'] / 60:.0f} CPU-minutes, {len(c['points'])} points, last "
            f"{last['coverage']:.3f} ± {last['coverage_se']:.3f} coverage, {100 * last['success']:.1f}% ± "
            f"{100 * last['success_se']:.1f} success at {last['samples'] / 1e6:.2f}M): coverage "
            f"{_reached(c, lambda p: p['coverage'] >= cov)}; success {_reached(c, lambda p: p['success'] >= suc)}; "
            f"both {_reached(c, lambda p: p['coverage'] >= cov and p['success'] >= suc)}.")
    ref = found["reference"]
    lines.append(f"- Quoted for scale: {ref['what']}: {ref['coverage']:.3f} coverage, {100 * ref['success']:.1f}% "
                 f"success at {ref['samples'] / 1e6:.1f}M samples ({ref['data']}).")
    return lines
