"""Which checkpoint to score: best.pt (chosen by the run's rollouts) against latest.pt, on the selection seeds.

    python benchmarks/learning/checkpoint_choice.py RUN_DIR [RUN_DIR ...] [--episodes 200] [--no-write]

A trial keeps as best.pt the checkpoint whose rollout on the 50 test seeds scored highest, and
scores best.pt on the selection seeds (final_eval.json) and the holdout. With the learning rate
decaying to 0 over the budget, the last checkpoint (latest.pt) is a candidate too: its weights
had the whole schedule, and choosing among noisy 50-seed rollouts can pick an earlier one. Each
RUN_DIR's best.pt and latest.pt are scored by `imf eval` on --episodes selection seeds (500000..;
the same seeds and sampling noise for both), so a run's two rows are paired: latest's gap to
best is the mean of the per-seed differences ± their SE; over runs, the mean of the runs' gaps.
Where best.pt is the last checkpoint the gap is 0. The holdout is never looked at. Writes
benchmarks/learning_results/checkpoint_choice_<obs>.json (rows of other runs stay) and its section
of benchmarks/RUNS.md.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml
from action_horizon import (RESULTS_DIR, by_run, holdout_looks, mean_se, paired_cells, paired_gap, rescore,
                            run_identity, run_named, selection_row, write_rows)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import RUNS, write_section  # noqa: E402

from imf.seeds import SELECTION  # noqa: E402

KEY, CHOSEN = "checkpoint", "chosen"  # the row's checkpoint, and the one the trial scores (best)
CHECKPOINTS = ("best", "latest")


def score_run(run_dir: Path, episodes: int) -> list[dict]:
    """best.pt and latest.pt of ``run_dir`` on the selection seeds, with the plan the run executed."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    named = run_named(run_dir, config)
    looks, executed = holdout_looks(named), config["policy"]["n_action_steps"]
    rows = []
    for name in CHECKPOINTS:
        scored = rescore(run_dir / "checkpoints" / f"{name}.pt", "--action-steps", executed, episodes)
        rows.append(selection_row(run_dir, config, scored, named, looks,
                                  {KEY: name, CHOSEN: "best", "epoch": scored.get("epoch")}))
        print(f"{run_dir.name}: {name}.pt (epoch {scored.get('epoch')}): coverage {rows[-1]['selection_score']:.3f}, "
              f"success {rows[-1]['selection_success']:.3f} ({rows[-1]['eval_s']:.0f} s)", flush=True)
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = ["| run | checkpoint | epoch | selection coverage | selection success | coverage vs best.pt (paired) "
             "| success vs best.pt (paired) |", "|---|---|---|---|---|---|---|"]
    for run, mine in sorted(by_run(rows).items()):
        for r in sorted(mine, key=lambda r: CHECKPOINTS.index(r[KEY])):
            lines.append(f"| {run} | {r[KEY]}.pt | {r['epoch']} | {paired_cells(mine, r, KEY, CHOSEN)} |")
    return lines


def summary(rows: list[dict]) -> list[str]:
    """latest.pt against best.pt over the runs: each run's paired gap, their mean (± SE over runs)."""
    runs = [mine for mine in by_run(rows).values() if {r[KEY] for r in mine} == set(CHECKPOINTS)]
    if not runs:
        return []
    gaps = {f: [paired_gap(mine, "latest", f, KEY, CHOSEN)[0] for mine in runs] for f in ("per_seed", "per_seed_success")}
    text = []
    for field, scale, unit in (("per_seed", 1, ""), ("per_seed_success", 100, " points")):
        values = gaps[field]
        mean, se = mean_se(values) if len(values) > 1 else (values[0], None)
        digits = 3 if scale == 1 else 1
        each = ", ".join(f"{scale * g:+.{digits}f}" for g in values)
        text.append(f"{'coverage' if scale == 1 else 'success'} {scale * mean:+.{digits}f}"
                    + ("" if se is None else f" ± {scale * se:.{digits}f}") + f"{unit} ({each})")
    ahead = sum(1 for g in gaps["per_seed"] if g > 0)
    return [f"- latest.pt against best.pt over {len(runs)} run(s): {'; '.join(text)}; latest.pt ahead on coverage "
            f"at {ahead} of {len(runs)}."]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", type=Path, nargs="+")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    for run_dir in args.run_dirs:
        missing = [n for n in CHECKPOINTS if not (run_dir / "checkpoints" / f"{n}.pt").is_file()]
        if missing or not (run_dir / "config.yaml").is_file():
            sys.exit(f"checkpoint_choice.py: {run_dir} has no {' or '.join(f'checkpoints/{n}.pt' for n in missing) or 'config.yaml'} "
                     f"(a finished imf trial is needed)")
    rows = [row for run_dir in args.run_dirs for row in score_run(run_dir, args.episodes)]
    print("\n".join(table(rows) + [""] + summary(rows)))
    if args.no_write:
        return 0
    obs = rows[0]["obs"]
    path = RESULTS_DIR / f"checkpoint_choice_{obs}.json"
    kept = write_rows(path, rows, lambda r: (run_identity(r), r[KEY]))
    title = f"## Checkpoint choice, {obs} (benchmarks/learning/checkpoint_choice.py)"
    write_section(title, [
        title, "",
        f"`python benchmarks/learning/checkpoint_choice.py RUN_DIR ...`: each run's best.pt (chosen by its rollouts on "
        f"the 50 test seeds) and latest.pt, `imf eval` on {args.episodes} selection seeds from {SELECTION.start} (the "
        f"same seeds and noise for both, so the gaps are paired: mean of the per-seed differences ± their SE), 1 "
        f"simulator worker, nice'd. These numbers choose how a run is scored; they are not claims. JSON: "
        f"benchmarks/learning_results/{path.name}.", "", *table(kept), "", *summary(kept)], RUNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
