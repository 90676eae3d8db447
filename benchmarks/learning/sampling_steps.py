"""Sampling steps without retraining: best.pt sampling each plan in N steps, on the selection seeds.

    python benchmarks/learning/sampling_steps.py RUN_DIR [RUN_DIR ...] [--steps 1,2,4] [--episodes 200]
        [--noise-seed S] [--parallel P] [--no-write]

A one-step policy (iMF, MeanFlow) maps noise to a plan in one pass of the transformer; its
average-velocity model also takes N smaller steps (z_r = z_t - (t - r) u(z_t, r, t) on a uniform
grid from 1 to 0), at N passes a plan. `imf eval --sample-steps N` scores the same weights that
way. Each N scores each RUN_DIR's best.pt on --episodes selection seeds (500000..; the same seeds
and sampling noise for every N), so a run's rows are paired: N's gap to the steps the run sampled
with in training (objective.sample_steps, whose rollouts chose best.pt) is the mean of the per-seed
differences ± their SE. Over several runs (training seeds) the reading is the mean of the runs'
gaps ± their SE. --noise-seed draws other sampling noise (default: each run's training seed, as
in its rollouts): a second reading of the same runs, kept and summarised apart from the first.
The holdout is never looked at. Writes
benchmarks/learning_results/sampling_steps_<obs>.json (rows of other runs stay) and its section of
benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import yaml
from action_horizon import (RESULTS_DIR, by_run, holdout_looks, mean_se, paired_cells, paired_gap, rescore,
                            run_identity, run_named, selection_row, write_rows)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

from imf.seeds import SELECTION  # noqa: E402

KEY, TRAINED = "sample_steps", "trained_steps"


def trained_steps(config: dict) -> int:
    """The sampling steps of the run's own rollouts (ddpm: its options.steps)."""
    objective = config.get("objective") or {}
    if objective.get("name") == "ddpm":
        return int((objective.get("options") or {}).get("steps", 1))
    return int(objective.get("sample_steps", 1))


def gaps_over_runs(rows: list[dict], n: float, field: str, key: str = KEY,
                   trained: str = TRAINED) -> tuple[float, float, list[float]]:
    """Mean ± SE over runs of each run's paired gap at ``key`` = n, and the gaps themselves
    (``rows``: one noise seed's)."""
    gaps = [paired_gap(mine, n, field, key, trained)[0] for mine in by_run_and_noise(rows).values()
            if any(r[key] == n for r in mine)]
    mean, se = mean_se(gaps) if len(gaps) > 1 else (gaps[0], float("nan"))
    return mean, se, gaps


def by_run_and_noise(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows by run and noise seed ("run" alone for the run's own noise): one paired reading each."""
    runs: dict[str, list[dict]] = {}
    for run, mine in by_run(rows).items():
        for r in mine:
            runs.setdefault(run if r.get("noise_seed") is None else f"{run} (noise {r['noise_seed']})", []).append(r)
    return runs


def table(rows: list[dict]) -> list[str]:
    lines = ["| run | sampling steps a plan | selection coverage | selection success | coverage vs trained "
             "steps (paired) | success vs trained steps (paired) | eval s |", "|---|---|---|---|---|---|---|"]
    for run, mine in sorted(by_run_and_noise(rows).items()):
        for r in sorted(mine, key=lambda r: r[KEY]):
            lines.append(f"| {run} | {r[KEY]} (ran with {r[TRAINED]}) | {paired_cells(mine, r, KEY, TRAINED)} | "
                         f"{r['eval_s']:.0f} |")
    return lines


def summary(rows: list[dict], key: str = KEY, trained: str = TRAINED, unit: str = "{} steps") -> list[str]:
    """Per noise seed and setting, the runs' paired gaps and their mean ± SE over runs (training
    seeds). ``unit`` names a setting, e.g. "{} steps"."""
    lines = []
    for noise in sorted({r.get("noise_seed") for r in rows}, key=lambda s: -1 if s is None else s):
        lines += _summary_at(noise, [r for r in rows if r.get("noise_seed") == noise], key, trained, unit)
    return lines


def _summary_at(noise: int | None, rows: list[dict], key: str, trained: str, unit: str) -> list[str]:
    runs, lines = by_run_and_noise(rows), []
    drawn = "each run's own sampling noise" if noise is None else f"sampling noise seed {noise}"
    for n in sorted({r[key] for r in rows} - {r[trained] for r in rows}):
        cov, cov_se, cov_gaps = gaps_over_runs(rows, n, "per_seed", key, trained)
        suc, suc_se, suc_gaps = gaps_over_runs(rows, n, "per_seed_success", key, trained)
        if len(cov_gaps) < 2:  # one run has no spread over runs: its gap alone, no SE
            lines.append(f"- {unit.format(n)}, {drawn}, one run: coverage {cov:+.3f}, success {100 * suc:+.1f} points.")
            continue
        lines.append(f"- {unit.format(n)}, {drawn}, over {len(cov_gaps)} of {len(runs)} runs: coverage {cov:+.3f} ± {cov_se:.3f} "
                     f"({', '.join(f'{g:+.3f}' for g in cov_gaps)}), success {100 * suc:+.1f} ± {100 * suc_se:.1f} "
                     f"points ({', '.join(f'{100 * g:+.1f}' for g in suc_gaps)}).")
    return lines


def _steps(text: str | None) -> list[int]:
    try:
        steps = [int(s) for s in text.split(",")] if text else [1, 2, 4]
    except ValueError:
        sys.exit(f"sampling_steps.py: --steps {text!r}: give whole numbers separated by commas, e.g. 1,2,4")
    if any(n < 1 for n in steps):
        sys.exit(f"sampling_steps.py: --steps {min(steps)}: sample each plan in at least 1 step")
    return steps


def paired_jobs(run_dirs: list[Path], own: Callable[[dict], Any], values: list) -> list[tuple]:
    """(run_dir, config, named, looks, value, the run's own value) for each run and value, the run's
    own value first: the baseline its other rows are paired with."""
    jobs = []
    for run_dir in run_dirs:
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        named = run_named(run_dir, config)
        trained, looks = own(config), holdout_looks(named)
        jobs += [(run_dir, config, named, looks, v, trained) for v in [trained] + sorted(set(values) - {trained})]
    return jobs


def rescore_jobs(jobs: list[tuple], one: Callable[[tuple], dict], parallel: int) -> list[dict]:
    """Each job's row from ``one``, ``parallel`` at a time, in the jobs' order."""
    with ThreadPoolExecutor(parallel) as pool:  # each job its own imf eval process
        return list(pool.map(one, jobs))


def publish(rows: list[dict], no_write: bool, stem: str, heading: str, same: Callable[[dict], object], intro: str,
            table_of: Callable[[list[dict]], list[str]], summary_of: Callable[[list[dict]], list[str]]) -> None:
    """Print the rows' table and their reading over runs; unless ``no_write``, keep them in
    benchmarks/learning_results/<stem>_<obs>.json (the rows of other runs, by ``same``, stay) and
    write the section "<heading>, <obs>" from every row kept. Shared by the scripts that score a
    run's checkpoint again under another setting, paired by seed."""
    print("\n".join(table_of(rows) + [""] + summary_of(rows)))
    if no_write:
        return
    obs = rows[0]["obs"]
    path = RESULTS_DIR / f"{stem}_{obs}.json"
    kept = write_rows(path, rows, same)
    title = f"## {heading}, {obs} (benchmarks/learning/{stem}.py)"
    write_section(title, [title, "", f"{intro} JSON: benchmarks/learning_results/{path.name}.", "",
                          *table_of(kept), "", "Over the runs (each run's paired gap, then their mean ± SE over runs):",
                          *summary_of(kept)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", type=Path, nargs="+")
    ap.add_argument("--steps", default=None, help="comma-separated N (default 1,2,4)")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--noise-seed", type=int, default=None, help="sampling noise (default: each run's training seed)")
    ap.add_argument("--parallel", type=int, default=1, help="imf eval processes at a time (rows keep their order)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    steps = _steps(args.steps)
    if args.parallel < 1:
        sys.exit(f"sampling_steps.py: --parallel {args.parallel}: give 1 or more imf eval processes at a time")
    for run_dir in args.run_dirs:
        if not (run_dir / "checkpoints" / "best.pt").is_file():
            sys.exit(f"sampling_steps.py: {run_dir} has no checkpoints/best.pt (a finished imf trial is needed)")
    extra = [] if args.noise_seed is None else ["--noise-seed", str(args.noise_seed)]
    jobs = paired_jobs(args.run_dirs, trained_steps, steps)

    def one(job: tuple) -> dict:
        run_dir, config, named, looks, n, trained = job
        scored = rescore(run_dir / "checkpoints" / "best.pt", "--sample-steps", n, args.episodes, extra)
        row = selection_row(run_dir, config, scored, named, looks,
                            {KEY: n, TRAINED: trained, "noise_seed": args.noise_seed})
        print(f"{run_dir.name}: {n} sampling steps (ran with {trained}): coverage {row['selection_score']:.3f}, "
              f"success {row['selection_success']:.3f} ({row['eval_s']:.0f} s)", flush=True)
        return row

    rows = rescore_jobs(jobs, one, args.parallel)
    publish(rows, args.no_write, "sampling_steps", "Sampling steps",
            lambda r: (run_identity(r), r.get("noise_seed"), r[KEY]),
            f"`python benchmarks/learning/sampling_steps.py RUN_DIR ...`: each best.pt, `imf eval --sample-steps N` on "
            f"{args.episodes} selection seeds from {SELECTION.start} (the same seeds and noise for every N, so a run's "
            f"gaps are paired: mean of the per-seed differences ± their SE), 1 simulator worker, nice'd. These "
            f"numbers choose the sampling steps; they are not claims.", table, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
