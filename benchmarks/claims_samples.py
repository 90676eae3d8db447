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


def _nearest(curve: dict[str, Any], samples: int) -> dict[str, Any]:
    return min(curve["points"], key=lambda p: abs(p["samples"] - samples))


def image_limits(data) -> list[str]:
    """Whether the image preset reached its target on the holdout, and what the JSON says limits it:
    samples per CPU-second, and the scores of images and keypoints at about the same samples."""
    runs = [r for r in data["image"] if r["objective"] == "imf"]
    keys = [r for r in data["keypoints"] if r["objective"] == "imf"]
    cov, suc = 0.80, 0.25
    met = [r for r in runs if r["holdout_score"] >= cov and r["holdout_success"] >= suc]
    per_seed = "; ".join(f"seed {r['seed']} {r['holdout_score']:.3f} / {100 * r['holdout_success']:.1f}%" for r in runs)
    rate = sum(r["samples"] / r["budget_s"] for r in runs) / len(runs)
    key_rate = sum(r["samples"] / r["budget_s"] for r in keys) / len(keys)
    lines = [f"- Target ({cov:.2f} holdout coverage and {100 * suc:.0f}% success at every training seed, "
             f"{runs[0]['budget_s'] / 60:.0f} CPU-minutes): {'reached' if len(met) == len(runs) else 'not reached'} "
             f"({per_seed}).",
             f"- Samples per CPU-second, one thread: images {rate:.0f}, keypoints {key_rate:.0f} "
             f"({key_rate / rate:.1f}x): in the same CPU-minutes the image policy sees that many times fewer samples."]
    curves = data["samples_to_threshold"]["curves"]
    image = [c for c in curves if c["obs"] == "image" and c["objective"] == "imf"]
    keypoint = [c for c in curves if c["obs"] == "keypoints" and c["objective"] == "imf"]
    if image and keypoint:
        i_last = max(image, key=lambda c: c["points"][-1]["samples"])
        a = i_last["points"][-1]
        b = _nearest(keypoint[0], a["samples"])
        lines.append(f"- At about the same samples, on the holdout curves: images ({i_last['label']}) "
                     f"{a['coverage']:.3f} ± {a['coverage_se']:.3f} coverage, {100 * a['success']:.1f}% success at "
                     f"{a['samples'] / 1e6:.2f}M; keypoints ({keypoint[0]['label']}) {b['coverage']:.3f} ± "
                     f"{b['coverage_se']:.3f}, {100 * b['success']:.1f}% at {b['samples'] / 1e6:.2f}M.")
    return lines
