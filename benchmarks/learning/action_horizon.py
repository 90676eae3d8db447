"""The action horizon without retraining: one best.pt replanning every K steps, on the selection seeds.

    python benchmarks/learning/action_horizon.py RUN_DIR [--steps 1,2,4,10] [--episodes 200]
        [--checkpoint best|latest] [--sample-steps N] [--no-write]

The policy predicts horizon - n_obs_steps + 1 actions from the current step on (10 in
`pusht_image_cpu`), and the simulator executes the first `policy.n_action_steps` of them (8) before
it plans again. `imf eval --action-steps K` executes the first K instead (by default 1, 2, 4 and
every predicted one): the same weights, so a difference between two K is the receding horizon's alone, not a
second training run's noise. Each K scores RUN_DIR's best.pt on --episodes selection seeds
(500000..; the same seeds and sampling noise for every K), so the rows are paired: a K's gap to the
trained horizon is the mean of its per-seed differences ± their SE. --checkpoint latest scores the
weights at the end of training instead of best.pt (what a preset with eval.final_checkpoint latest
scores); --sample-steps N samples every plan in N steps (a run trained at another number, scored
as its preset samples); each is a reading of its own. The holdout is never looked
at: a horizon chosen here is claimed by benchmarks/learning/learning.py afterwards. Writes
benchmarks/learning_results/action_horizon_<obs>.json (the rows already there for other runs, and for
other K of this run, stay)
and its section of benchmarks/RESULTS.md; benchmarks/claims/claims.py reads the JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import holdout_ledger
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402
from run_record import log_rows  # noqa: E402

from imf.store import samples_trained  # noqa: E402
from imf.seeds import SELECTION  # noqa: E402
from imf.stats import standard_error  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "benchmarks" / "learning_results"
HOLDOUT_FIELDS = ("holdout_score", "holdout_score_se", "holdout_success", "holdout_success_se")


def score(checkpoint: Path, k: int, episodes: int, sample_steps: int | None = None) -> dict:
    """``imf eval`` of ``checkpoint`` executing ``k`` actions a plan, on the selection seeds."""
    return rescore(checkpoint, "--action-steps", k, episodes,
                   None if sample_steps is None else ["--sample-steps", str(sample_steps)])


def rescore(checkpoint: Path, flag: str, value: int, episodes: int, extra: list[str] | None = None) -> dict:
    """``imf eval`` of ``checkpoint`` with ``flag value`` (and ``extra`` flags) on ``episodes``
    selection seeds, nice'd."""
    cmd = ["nice", "-n", "10", sys.executable, "-m", "imf", "eval", str(checkpoint), "--n-test", str(episodes),
           "--start-seed", str(SELECTION.start), "--workers", "1", flag, str(value), *(extra or []), "--json"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    if proc.returncode != 0:
        sys.exit(f"{Path(sys.argv[0]).name}: imf eval {flag} {value} failed: "
                 f"{(proc.stderr.strip().splitlines() or ['no message'])[-1]}")
    return {**json.loads(proc.stdout), "eval_s": time.monotonic() - start}


def mean_se(values: list[float]) -> tuple[float, float]:
    return sum(values) / len(values), standard_error(values)


def run_named(run_dir: Path, config: dict) -> dict:
    """The run as the holdout ledger keys it: observations, objective, seed and, where the run's log
    tells them, its training samples (a row without them is counted as never looked at)."""
    rows = log_rows(run_dir) if (run_dir / "logs.json.txt").is_file() else []
    run = {"obs": config["policy"]["obs_type"], "objective": (config.get("objective") or {}).get("name", "imf"),
           "seed": config["training"]["seed"]}
    if rows and "batch_size" in config["training"]:
        run["samples"] = samples_trained(rows[-1], config["training"]["batch_size"]) or 0
    return run


def holdout_looks(named: dict) -> int:
    """The holdout ledger's looks at the run ``named`` (run_named; its curve, a preset's record):
    counted there, never here."""
    return holdout_ledger.looks_of(holdout_ledger.load_from(RESULTS_DIR), named)


def row(run_dir: Path, config: dict, scored: dict, named: dict, looks: int) -> dict:
    knob = {"action_steps": scored["action_steps"], "planned": config["policy"]["n_action_steps"]}
    return selection_row(run_dir, config, scored, named, looks, knob)


def selection_row(run_dir: Path, config: dict, scored: dict, named: dict, looks: int, knob: dict) -> dict:
    """One rescoring of ``run_dir``'s best.pt: ``knob`` (the setting scored and the one trained
    with), then its selection coverage and success, per seed and as mean ± SE; ``named`` (run_named,
    read once a run) is what the ledger recounts the row's looks by (holdout_ledger --write)."""
    seeds = sorted(scored["per_seed"], key=int)
    cover = [float(scored["per_seed"][s]) for s in seeds]
    success = [float(scored["per_seed_success"][s]) for s in seeds]
    (score_, score_se), (succ, succ_se) = mean_se(cover), mean_se(success)
    return {"obs": config["policy"]["obs_type"], "preset": config["name"], "run": run_dir.name,
            "objective": named["objective"], "seed": config["training"]["seed"],
            **({"samples": named["samples"]} if "samples" in named else {}), **knob,
            "selection_score": score_, "selection_score_se": score_se, "selection_success": succ,
            "selection_success_se": succ_se, "selection_episodes": len(seeds),
            "selection_seed_start": int(seeds[0]), **dict.fromkeys(HOLDOUT_FIELDS), "holdout_looks": looks,
            "eval_s": round(scored["eval_s"], 1), "per_seed": cover, "per_seed_success": success}


def run_identity(r: dict) -> str:
    """The run a row rescored: its folder's name and, where the row has its samples, the holdout
    ledger's key. Both are needed: two folders of one name (imf-2-s42 of two preset records) differ
    in samples, and two ablation runs at a fixed number of samples (kpS-h16b, kpS-h16-full) differ
    only in name."""
    return f"run {r['run']}" + (f" ({holdout_ledger.run_key(r)})" if "samples" in r else "")


def by_run(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows grouped by run_identity, each group under the folder's name, or where two runs share a
    name, the name and the identity (observations, objective, seed, samples)."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(run_identity(r), []).append(r)
    names = [g[0]["run"] for g in groups.values()]
    return {(g[0]["run"] if names.count(g[0]["run"]) == 1 else f"{g[0]['run']} ({holdout_ledger.run_key(g[0])})"): g
            for g in groups.values()}


def write_rows(path: Path, rows: list[dict], same: Callable[[dict], object]) -> list[dict]:
    """``path``'s rows with those measured again (same ``same(row)`` as one of ``rows``) replaced
    by ``rows``; written, and returned. ``same`` names a run and the setting scored, so that a run
    scored later at another setting keeps the rows it had."""
    mine = {same(r) for r in rows}
    kept = [r for r in (json.loads(path.read_text()) if path.is_file() else []) if same(r) not in mine] + rows
    path.write_text(json.dumps(kept, indent=1) + "\n")
    return kept


def paired_gap(rows: list[dict], k: int, field: str, key: str = "action_steps",
               trained: str = "planned") -> tuple[float, float]:
    """Mean ± SE of the per-seed differences, the row at ``key`` = k minus the row at the
    setting the run trained with (``trained``)."""
    by_k = {r[key]: r for r in rows}
    base = by_k[rows[0][trained]]
    return mean_se([a - b for a, b in zip(by_k[k][field], base[field])])


def paired_cells(mine: list[dict], r: dict, key: str = "action_steps", trained: str = "planned") -> str:
    """Row ``r``'s table cells: selection coverage and success ± SE, then its paired gaps on both
    to the row of ``mine`` (its run's rows) at the setting the run trained with."""
    gap = [paired_gap(mine, r[key], f, key, trained) for f in ("per_seed", "per_seed_success")]
    return (f"{r['selection_score']:.3f} ± {r['selection_score_se']:.3f} | {100 * r['selection_success']:.1f}% ± "
            f"{100 * r['selection_success_se']:.1f} | {gap[0][0]:+.3f} ± {gap[0][1]:.3f} | "
            f"{100 * gap[1][0]:+.1f} ± {100 * gap[1][1]:.1f} pts")


def reading_of(r: dict) -> tuple[str, int | None]:
    """Which reading of its run a row is: the checkpoint scored and the sampling steps (None: the
    run's own); rows of one reading pair with each other, not with another reading's."""
    return r.get("checkpoint_name", "best.pt"), r.get("sample_steps")


def by_reading(rows: list[dict]) -> dict[str, list[dict]]:
    """by_run, each run's rows split by reading_of, a reading other than best.pt at the run's own
    sampling steps named after the run."""
    out: dict[str, list[dict]] = {}
    for run, group in by_run(rows).items():
        for r in group:
            checkpoint, steps = reading_of(r)
            label = run + ("" if checkpoint == "best.pt" else f", {checkpoint}") + \
                ("" if steps is None else f", {steps} sampling steps")
            out.setdefault(label, []).append(r)
    return out


def table(rows: list[dict]) -> list[str]:
    lines = ["| run | executed actions a plan | selection coverage | selection success | coverage vs trained "
             "horizon (paired) | success vs trained horizon (paired) | eval s |", "|---|---|---|---|---|---|---|"]
    for run, group in sorted(by_reading(rows).items()):
        mine = sorted(group, key=lambda r: -r["action_steps"])
        for r in mine:
            lines.append(f"| {run} | {r['action_steps']} (ran with {r['planned']}) | {paired_cells(mine, r)} | "
                         f"{r['eval_s']:.0f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--steps", default=None, help="comma-separated K (default: 1, 2, 4, ... up to the trained horizon)")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--checkpoint", choices=("best", "latest"), default="best")
    ap.add_argument("--sample-steps", type=int, default=None, help="sampling steps a plan (default: the run's own)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    name = f"{args.checkpoint}.pt"
    best = args.run_dir / "checkpoints" / name
    if not best.is_file():
        sys.exit(f"action_horizon.py: {args.run_dir} has no checkpoints/{name} (a finished imf trial is needed)")
    if args.sample_steps is not None and args.sample_steps < 1:
        sys.exit(f"action_horizon.py: --sample-steps {args.sample_steps}: sample each plan in at least 1 step")
    config = yaml.safe_load((args.run_dir / "config.yaml").read_text())
    policy = config["policy"]
    planned = policy["n_action_steps"]
    ahead = policy.get("horizon", planned) - policy.get("n_obs_steps", 1) + 1  # predicted from the current step on
    try:
        steps = ([int(s) for s in args.steps.split(",")] if args.steps else
                 [k for k in (1, 2, 4, 8, 16) if k < planned] + [ahead])
    except ValueError:
        sys.exit(f"action_horizon.py: --steps {args.steps!r}: give whole numbers separated by commas, e.g. 1,2,4")
    bad = [k for k in steps if not 1 <= k <= ahead]
    if bad:
        sys.exit(f"action_horizon.py: --steps {bad[0]}: this checkpoint predicts {ahead} actions from the "
                 f"current step; give 1..{ahead}")
    # the trained horizon first (the pairs' baseline), then the longest
    steps = [planned] + sorted(set(steps) - {planned}, reverse=True)
    named = run_named(args.run_dir, config)
    rows, looks = [], holdout_looks(named)
    reading = {} if name == "best.pt" and args.sample_steps is None else \
        {"checkpoint_name": name, "sample_steps": args.sample_steps}
    for k in steps:
        rows.append({**row(args.run_dir, config, score(best, k, args.episodes, args.sample_steps), named, looks),
                     **reading})
        print(f"{args.run_dir.name}: {k} actions a plan (ran with {planned}): coverage {rows[-1]['selection_score']:.3f}, "
              f"success {rows[-1]['selection_success']:.3f} ({rows[-1]['eval_s']:.0f} s)", flush=True)
    lines = table(rows)
    print("\n".join(lines))
    if args.no_write:
        return 0
    path = RESULTS_DIR / f"action_horizon_{rows[0]['obs']}.json"
    kept = write_rows(path, rows, lambda r: (run_identity(r), reading_of(r), r["action_steps"]))  # other Ks stay
    write_section(*section(rows[0]["obs"], args.episodes, path.name, kept))
    return 0


def section(obs: str, episodes: int, json_name: str, rows: list[dict]) -> tuple[str, list[str]]:
    """The RUNS.md section of every row in ``json_name``: (its title, its lines)."""
    title = f"## Action horizon, {obs} (benchmarks/learning/action_horizon.py)"
    return title, [
        title, "",
        f"`python benchmarks/learning/action_horizon.py RUN_DIR`: one best.pt (or, where the run column says so, "
        f"latest.pt and the sampling steps a plan), `imf eval --action-steps K` on "
        f"{episodes} selection seeds from {SELECTION.start} (the same seeds and noise for every K, so the gaps "
        f"are paired: mean of the per-seed differences ± their SE), 1 simulator worker, nice'd. These "
        f"numbers choose a horizon; they are not claims. JSON: benchmarks/learning_results/{json_name}.", "",
        *table(rows)]


if __name__ == "__main__":
    sys.exit(main())
