"""The action-horizon passage of benchmarks/claims/claims.py, from
benchmarks/learning_results/action_horizon_image.json (benchmarks/learning/action_horizon.py): one best.pt
replanning every K steps, each K paired with the trained horizon on the same selection seeds."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))  # benchmarks/learning/
from action_horizon import by_run, paired_gap  # noqa: E402

Z = 1.96


def _paired(rows: dict[int, dict[str, Any]], k: int, field: str, scale: float) -> tuple[str, bool]:
    mean, se = paired_gap(list(rows.values()), k, field)
    z = mean / se if se > 0 else (0.0 if mean == 0 else math.inf)
    unit, digits = (" points", 1) if scale == 100 else ("", 3)
    return f"{scale * mean:+.{digits}f} ± {scale * se:.{digits}f}{unit} (z {z:+.2f})", abs(z) > Z


def horizon_lines(data, choices: dict[tuple[str, int], str], together: tuple[str, ...] = ()) -> list[str]:
    """Per run, each executed horizon against the trained one; ``choices``: (run, K) -> what was
    done; ``together``: runs whose paired gaps are also averaged (the measure a rule read)."""
    rows = data["action_horizon_image"]
    lines = ["Each row one best.pt executing the first K of the actions it predicts before planning again (written "
             "by benchmarks/claims/claims.py from benchmarks/learning_results/action_horizon_image.json): the same "
             "weights and the same 200 selection seeds, so each gap is paired (the mean of the per-seed "
             "differences ± their SE). These numbers choose a horizon; they are not claims."]
    for run, group in sorted(by_run(rows).items()):
        mine = {r["action_steps"]: r for r in group}
        base = mine[next(iter(mine.values()))["planned"]]
        samples = f", {base['samples'] / 1e6:.2f}M samples" if base.get("samples") else ""
        lines.append(f"- {run} (training seed {base['seed']}{samples}), {base['planned']} actions executed a plan, "
                     f"as it ran: selection {base['selection_score']:.3f} ± {base['selection_score_se']:.3f} "
                     f"coverage, {100 * base['selection_success']:.1f}% ± "
                     f"{100 * base['selection_success_se']:.1f} success.")
        for k in sorted((k for k in mine if k != base["planned"]), reverse=True):
            cov, cov_clear = _paired(mine, k, "per_seed", 1)
            suc, suc_clear = _paired(mine, k, "per_seed_success", 100)
            beyond = [what for what, clear in (("coverage", cov_clear), ("success", suc_clear)) if clear]
            verdict = f"beyond noise on {' and '.join(beyond)}" if beyond else "within noise on both"
            lines.append(f"- {run}, {k} executed: coverage {cov}, success {suc}: {verdict}. "
                         f"{choices.get((run, k), 'Not adopted.')}")
    return lines + _together(rows, together)


def _together(rows: list[dict[str, Any]], runs: tuple[str, ...]) -> list[str]:
    """One line per executed K that every run in ``runs`` measured: the mean over the runs of each
    run's paired gap, and the gaps themselves."""
    groups = by_run(rows)
    mine = {run: {r["action_steps"]: r for r in groups.get(run, [])} for run in runs}
    if not runs or not all(mine.values()):
        return []
    planned = {next(iter(m.values()))["planned"] for m in mine.values()}
    shared = sorted(set.intersection(*(set(m) for m in mine.values())) - planned, reverse=True)
    lines = [f"Over {' and '.join(runs)}, the mean of the runs' paired gaps against {min(planned)} executed:"]
    for k in shared:
        parts = []
        for what, field, scale, unit, digits in (("coverage", "per_seed", 1, "", 3),
                                                  ("success", "per_seed_success", 100, " points", 1)):
            gaps = [scale * paired_gap(list(m.values()), k, field)[0] for m in mine.values()]
            each = ", ".join(f"{g:+.{digits}f}" for g in gaps)
            parts.append(f"{what} {sum(gaps) / len(gaps):+.{digits}f}{unit} ({each})")
        lines.append(f"- {k} executed: {'; '.join(parts)}.")
    return lines
