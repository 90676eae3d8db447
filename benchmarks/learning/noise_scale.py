"""The starting noise's scale without retraining: a checkpoint sampling each plan from s times unit
noise, on the selection seeds.

    python benchmarks/learning/noise_scale.py RUN_DIR [RUN_DIR ...] [--scales 0.5,0.75]
        [--checkpoint latest|best] [--sample-steps N] [--episodes 200] [--noise-seed S] [--parallel P]
        [--no-write]

A flow-type policy maps a draw of noise to a plan; drawn from a narrower normal (s < 1), the plan
starts nearer the middle of the noise and lands nearer a mode of what the model learned, the
"temperature" of a sampler. `imf eval --noise-scale s` scores the same weights that way. Each s
scores each RUN_DIR's checkpoint (--checkpoint; default latest.pt, what the presets score) on
--episodes selection seeds (500000..; the same seeds and the same noise draws, scaled, for every
s), so a run's rows are paired: s's gap to the scale the run was scored with
(objective.noise_scale) is the mean of the per-seed differences ± their SE; over several runs the
reading is the mean of the runs' gaps ± their SE. --sample-steps scores every row in N sampling
steps a plan (a run trained at another number, scored as a preset samples). The holdout is never looked at. Writes
benchmarks/learning_results/noise_scale_<obs>.json (rows of other runs stay) and its section of
benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from action_horizon import by_run, paired_cells, rescore, run_identity, selection_row
from sampling_steps import paired_jobs, publish, rescore_jobs, summary

from imf.seeds import SELECTION

KEY, TRAINED, UNIT = "noise_scale", "trained_scale", "noise x {}"


def trained_scale(config: dict) -> float:
    """The starting noise's scale the run's own rollouts sampled from."""
    return float((config.get("objective") or {}).get("noise_scale", 1.0))


def table(rows: list[dict]) -> list[str]:
    lines = ["| run | checkpoint | starting noise | selection coverage | selection success | coverage vs run's "
             "scale (paired) | success vs run's scale (paired) | eval s |", "|---|---|---|---|---|---|---|---|"]
    for run, mine in sorted(by_run(rows).items()):
        for r in sorted(mine, key=lambda r: r[KEY]):
            lines.append(f"| {run} | {r['checkpoint_name']} | x {r[KEY]:g} (ran with x {r[TRAINED]:g}) | "
                         f"{paired_cells(mine, r, KEY, TRAINED)} | {r['eval_s']:.0f} |")
    return lines


def _scales(text: str) -> list[float]:
    try:
        scales = [float(s) for s in text.split(",")]
    except ValueError:
        sys.exit(f"noise_scale.py: --scales {text!r}: give numbers separated by commas, e.g. 0.5,0.75")
    if any(not (s > 0 and math.isfinite(s)) for s in scales):
        sys.exit(f"noise_scale.py: --scales {text!r}: each scale must be a positive number")
    return scales


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", type=Path, nargs="+")
    ap.add_argument("--scales", default="0.5,0.75", help="comma-separated scales beside the run's own")
    ap.add_argument("--checkpoint", choices=("latest", "best"), default="latest")
    ap.add_argument("--sample-steps", type=int, default=None, help="sampling steps a plan (default: each run's own)")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--noise-seed", type=int, default=None, help="sampling noise (default: each run's training seed)")
    ap.add_argument("--parallel", type=int, default=1, help="imf eval processes at a time (rows keep their order)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    scales = _scales(args.scales)
    if args.parallel < 1:
        sys.exit(f"noise_scale.py: --parallel {args.parallel}: give 1 or more imf eval processes at a time")
    name = f"{args.checkpoint}.pt"
    for run_dir in args.run_dirs:
        if not (run_dir / "checkpoints" / name).is_file():
            sys.exit(f"noise_scale.py: {run_dir} has no checkpoints/{name} (a finished imf trial is needed)")
    extra = ([] if args.noise_seed is None else ["--noise-seed", str(args.noise_seed)]) \
        + ([] if args.sample_steps is None else ["--sample-steps", str(args.sample_steps)])
    jobs = paired_jobs(args.run_dirs, trained_scale, scales)

    def one(job: tuple) -> dict:
        run_dir, config, named, looks, s, trained = job
        scored = rescore(run_dir / "checkpoints" / name, "--noise-scale", s, args.episodes, extra)
        row = selection_row(run_dir, config, scored, named, looks,
                            {KEY: s, TRAINED: trained, "checkpoint_name": name, "noise_seed": args.noise_seed,
                             "sample_steps": args.sample_steps})
        print(f"{run_dir.name}: {name} from noise x {s:g} (ran with x {trained:g}): coverage "
              f"{row['selection_score']:.3f}, success {row['selection_success']:.3f} ({row['eval_s']:.0f} s)", flush=True)
        return row

    rows = rescore_jobs(jobs, one, args.parallel)
    intro = (f"`python benchmarks/learning/noise_scale.py RUN_DIR ...`: each run's checkpoint, `imf eval --noise-scale "
             f"s` on {args.episodes} selection seeds from {SELECTION.start} (the same seeds and noise draws, scaled, for "
             f"every s, so a run's gaps are paired: mean of the per-seed differences ± their SE), 1 simulator worker, "
             f"nice'd. These numbers choose the scale; they are not claims.")
    publish(rows, args.no_write, "noise_scale", "Starting noise",
            lambda r: (run_identity(r), r["checkpoint_name"], r.get("sample_steps"), r.get("noise_seed"), r[KEY]),
            intro, table, lambda rows: summary(rows, KEY, TRAINED, UNIT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
