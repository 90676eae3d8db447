"""The causal-vs-full passages (README's answer, RESULTS' tables), written from
benchmarks/learning_results/attention.json (benchmarks/learning/attention.py collect)."""
from __future__ import annotations

from typing import Any

from claims_base import ClaimError, Data, pct


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _gap_text(gap: dict[str, Any] | None) -> str:
    if gap is None:
        return "-"
    return f"{gap['diff']:+.3f} ± {gap['se']:.3f} (z {gap['z']:+.2f})"


def _verdict(gap: dict[str, Any] | None) -> str:
    if gap is None:
        return "not measured"
    if not gap["beyond"]:
        return "tie"
    return "causal ahead" if gap["diff"] > 0 else "full ahead"


def _cells(data: Data) -> list[dict[str, Any]]:
    cells = [c for c in data["attention"]["cells"] if c.get("causal") and c.get("full")]
    if not cells:
        raise ClaimError("attention.json: no cell has both a causal and a full run")
    return cells


def _looks(data: Data) -> dict[str, dict[str, Any]]:
    found = {r["mask"]: r for r in data["attention"]["holdout"]}
    if set(found) != {"causal", "full"}:
        raise ClaimError(f"attention.json: expected one holdout look per sweep, found {sorted(found)}")
    return found


def _counts(cells: list[dict[str, Any]], key: str) -> dict[str, int]:
    counts = {"tie": 0, "causal ahead": 0, "full ahead": 0, "not measured": 0}
    for cell in cells:
        counts[_verdict(cell.get(key))] += 1
    return counts


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{what} in {n}" for what, n in counts.items() if n) or "none"


def _setting(data: Data, key: str) -> Any:
    """A setting every run shares (its one value), else a ClaimError: the passages quote it as one."""
    values = {r[key] for r in data["attention"]["runs"]}
    if len(values) != 1:
        raise ClaimError(f"attention.json: the runs differ in {key} ({sorted(values)}), quoted as one")
    return values.pop()


def readme_attention(data: Data) -> list[str]:
    cells, looks = _cells(data), _looks(data)
    seeds = sorted({r["seed"] for r in data["attention"]["runs"]})
    sel_eps = _setting(data, "selection_episodes")
    sel, mx = _counts(cells, "selection_gap"), _counts(cells, "max_gap")
    c, f = looks["causal"], looks["full"]
    diff = c["holdout"] - f["holdout"]
    se = (c["holdout_se"] ** 2 + f["holdout_se"] ** 2) ** 0.5
    z = diff / se if se else 0.0
    sizes = sorted({(x["n_emb"], x["n_layer"]) for x in cells})
    return [
        f"Does full attention beat causal? Two sweeps run here with `imf sweep --mask causal` and "
        f"`--mask full` ({_setting(data, 'obs_type')}, `{_setting(data, 'preset')}` as it was before issue #47 "
        f"changed it (the boundary tangent), with "
        f"{_setting(data, 'n_head')} heads on both sides, {len(sizes)} cells of n_emb x n_layer "
        f"{', '.join(f'{e}x{l}' for e, l in sizes)}, seeds {' and '.join(map(str, seeds))}, "
        f"{_setting(data, 'epochs')} epochs of {_setting(data, 'steps_per_epoch')} steps of "
        f"{_setting(data, 'batch_size')} each: equal epochs; benchmarks/learning/attention.py). Causal minus full "
        f"per cell on {sel_eps} selection seeds (mean over seeds ± SE): {_counted(sel)} of {len(cells)} "
        f"cells. By the mission's own measure, the max of test_mean_score over each run's rollouts: "
        f"{_counted(mx)}; where the two disagree, the max over {_setting(data, 'rollouts')} rollouts of "
        f"{_setting(data, 'test_episodes')} test seeds favours the run with the luckiest rollout, and "
        f"the selection seeds decide.",
        f"One holdout look per sweep ({c['holdout_episodes']} seeds, the best trial of each on the "
        f"selection seeds): causal "
        f"{c['id']} {c['holdout']:.3f} ± {c['holdout_se']:.3f} coverage, {pct(c['holdout_success'])} "
        f"success; full {f['id']} {f['holdout']:.3f} ± {f['holdout_se']:.3f}, "
        f"{pct(f['holdout_success'])}; causal minus full {diff:+.3f} ± {se:.3f} (z {z:+.2f}): "
        + ("beyond noise." if abs(z) > 1.96 else "within noise.")
        + f" At this scale ({_setting(data, 'epochs') * _setting(data, 'steps_per_epoch'):,} steps "
          "on a CPU) the answer is about small models early in training; the mission's grid needs GPUs "
          "(benchmarks/RESULTS.md, \"The sweep's own question\").",
    ]


def _axis_means(cells: list[dict[str, Any]], mask: str, axis: str) -> list[tuple[int, float, float]]:
    """(value, mean of the cells' selection scores, its SE) along ``axis`` for one mask."""
    out = []
    for value in sorted({c[axis] for c in cells}):
        sides = [c[mask] for c in cells if c[axis] == value]
        mean = sum(x["selection"] for x in sides) / len(sides)
        se = sum(x["selection_se"] ** 2 for x in sides) ** 0.5 / len(sides)
        out.append((value, mean, se))
    return out


def trend_lines(cells: list[dict[str, Any]]) -> list[str]:
    """Width and depth in words, per mask, with the ends' gap against its noise."""
    lines = []
    for axis, name in (("n_emb", "width"), ("n_layer", "depth")):
        for mask in ("causal", "full"):
            means = _axis_means(cells, mask, axis)
            (lo, lo_mean, lo_se), (hi, hi_mean, hi_se) = means[0], means[-1]
            gap, se = hi_mean - lo_mean, (lo_se ** 2 + hi_se ** 2) ** 0.5
            word = ("rises" if gap > 0 else "falls") if abs(gap) > 1.96 * se else "does not move beyond noise"
            path = ", ".join(f"{v}: {m:.3f} ± {e:.3f}" for v, m, e in means)
            lines.append(f"- {name}, {mask}: selection score over the cells at each {axis} ({path}); from "
                         f"{axis} {lo} to {hi} it {word} ({gap:+.3f} ± {se:.3f}).")
    return lines


def results_attention(data: Data) -> list[str]:
    runs = sorted(data["attention"]["runs"], key=lambda r: -(r["max_test"] or 0.0))
    cells = _cells(data)
    lines = [f"Every run, ranked by the mission's measure (max test_mean_score over its rollouts, "
             f"{_setting(data, 'test_episodes')} test seeds each), with its final epoch and its best.pt on "
             f"{_setting(data, 'selection_episodes')} selection seeds:", "",
             "| rank | mask | n_emb | n_layer | seed | final epoch | max test | selection |",
             "|---|---|---|---|---|---|---|---|"]
    for rank, r in enumerate(runs, start=1):
        lines.append(f"| {rank} | {r['mask']} | {r['n_emb']} | {r['n_layer']} | {r['seed']} | "
                     f"{r['final_epoch']} | {_num(r['max_test'])} | {_num(r['selection'])} |")
    lines += ["", "Per cell, mean over the seeds ± SE, causal minus full (z) and the verdict "
              "(a tie within 1.96 SE):", "",
              "| n_emb x n_layer | causal sel. | full sel. | causal - full, selection | verdict | by max |",
              "|---|---|---|---|---|---|"]
    for c in cells:
        lines.append(f"| {c['n_emb']}x{c['n_layer']} | {_num(c['causal']['selection'])} | "
                     f"{_num(c['full']['selection'])} | {_gap_text(c.get('selection_gap'))} | "
                     f"{_verdict(c.get('selection_gap'))} | {_verdict(c.get('max_gap'))} |")
    disagree = [f"{c['n_emb']}x{c['n_layer']}" for c in cells
                if _verdict(c.get("selection_gap")) != _verdict(c.get("max_gap"))]
    lines += ["", "Trends (means over the cells, selection seeds):", *trend_lines(cells)]
    lines += ["", "Where the max-over-checkpoints reading and the selection reading disagree: "
              + (", ".join(disagree) + f" (the max picks the best of {_setting(data, 'rollouts')} rollouts; "
                 "the selection seeds score one checkpoint)" if disagree else "nowhere") + "."]
    return lines
