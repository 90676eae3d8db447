"""What more demonstrations buy: pusht_lowdim_cpu at its default budget on N scripted demos.

    python benchmarks/learning/data_scaling.py --sizes 50,100,200,500,1000,2000 --seeds 42,43 --threads 1
    python benchmarks/learning/data_scaling.py --collect runs/data       # runs already trained: record them

Each run is benchmarks/learning/learning.py's trial (imf at one step, `training.time_budget_s` on the cpu
clock, one look at the holdout) with `data.demo_episodes=N`; an epoch is at most 250 steps
whatever N, so every size trains for the same CPU time. Writes
benchmarks/learning_results/data_scaling.json (one object per run: demo_episodes, seed, budget_s,
samples, selection_* and holdout_* with their _se, the curve), docs/data_scaling.png (selection
and holdout coverage and success against N) and the table in benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "claims"))  # benchmarks/claims/
from claims_data import by_size, mean_of  # noqa: E402
from learning import RESULTS_DIR, ROOT, train  # noqa: E402
from results_file import write_section  # noqa: E402
from run_record import read_record  # noqa: E402

SECTION = "## Data scaling, keypoints (benchmarks/learning/data_scaling.py)"
WINDOWS = re.compile(r"(\d+) train windows")
KEEP = ("id", "demo_episodes", "train_windows", "seed", "preset", "objective", "budget_s", "budget_clock", "status", "steps",
        "samples", "train_min", "best_test_score", "best_test_score_se", "best_test_success", "best_epoch",
        "selection_score", "selection_score_se", "selection_success", "selection_success_se", "selection_episodes",
        "holdout_score", "holdout_score_se", "holdout_success", "holdout_success_se", "holdout_episodes",
        "holdout_looks", "holdout_near_misses", "curve")


def record_of(run_dir: Path) -> dict:
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    if config["data"].get("path"):
        sys.exit(f"data_scaling.py: {run_dir} trained on data.path, not the scripted demos")
    found = WINDOWS.search((run_dir / "stdout.log").read_text())
    record = {**read_record(run_dir), "demo_episodes": config["data"]["demo_episodes"],
              "train_windows": int(found.group(1)) if found else None}
    missing = [k for k in ("selection_score", "holdout_score") if k not in record]
    if missing:
        sys.exit(f"data_scaling.py: {run_dir} has no {' or '.join(missing)} (run with --final-eval and --holdout)")
    return {k: record.get(k) for k in KEEP}


def collect(folder: Path) -> list[dict]:
    runs = sorted({Path(root).resolve() for root, _, files in os.walk(folder, followlinks=True)
                   if "holdout.json" in files})
    if not runs:
        sys.exit(f"data_scaling.py: no run folder with a holdout look under {folder}")
    records = [record_of(r) for r in runs]
    return sorted(records, key=lambda r: (r["demo_episodes"], r["seed"]))


def _pm(value: float, se: float) -> str:
    return f"{value:.3f} ± {se:.3f}"


def table(records: list[dict]) -> list[str]:
    minutes = sorted({round(r["budget_s"] / 60) for r in records})
    lines = [SECTION, "",
             f"`python benchmarks/learning/data_scaling.py`: pusht_lowdim_cpu (imf, one step) for {', '.join(map(str, minutes))} "
             "training minutes on the cpu clock, one torch thread a run, nice'd, two runs at a time on the "
             "shared 2-core machine, on N scripted demonstrations (2% held out for validation). best.pt on "
             "200 selection seeds (what a choice would use) and 200 holdout seeds (the claim; one look a "
             "run); mean ± SE over the training seeds (the larger of the seeds' spread and the episodes').", "",
             "| demos | seeds | samples | selection coverage | selection success | holdout coverage | holdout success |",
             "|---|---|---|---|---|---|---|"]
    for n, runs in by_size(records).items():
        cells = [_pm(*mean_of(runs, k)) for k in ("selection_score", "selection_success", "holdout_score", "holdout_success")]
        samples = sum(r["samples"] for r in runs) / len(runs)
        lines.append(f"| {n} | {', '.join(str(r['seed']) for r in runs)} | {samples / 1e6:.2f}M | " + " | ".join(cells) + " |")
    return lines


def plot(records: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = by_size(records)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (key, label) in zip(axes, (("score", "coverage (mean score)"), ("success", "success rate"))):
        for seeds, style in (("selection", "s--"), ("holdout", "o-")):
            stats = [mean_of(runs, f"{seeds}_{key}") for runs in sizes.values()]
            ax.errorbar(list(sizes), [m for m, _ in stats], yerr=[1.96 * se for _, se in stats], fmt=style,
                        capsize=3, label=f"{seeds} seeds (mean of training seeds, 95%)")
            for r in records:
                ax.plot(r["demo_episodes"], r[f"{seeds}_{key}"], "." if seeds == "holdout" else "x", color="gray", ms=5)
        ax.set_xscale("log")
        ax.set_xticks(list(sizes), [str(n) for n in sizes])
        ax.set_xlabel("scripted demonstrations")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right", fontsize=8)
    minutes = records[0]["budget_s"] / 60
    fig.suptitle(f"pusht_lowdim_cpu at {minutes:.0f} cpu-minutes a run: more demonstrations (grey: single runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,100,200,500,1000,2000", help="demo episodes, comma-separated")
    parser.add_argument("--seeds", default="42,43", help="training seeds, comma-separated")
    parser.add_argument("--minutes", type=float, default=15.0, help="training minutes a run (cpu clock)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "data_scaling")
    parser.add_argument("--collect", type=Path, help="record the runs under this folder instead of training")
    args = parser.parse_args()
    if not args.collect:
        try:
            sizes, seeds = [int(s) for s in args.sizes.split(",")], [int(s) for s in args.seeds.split(",")]
        except ValueError:
            sys.exit(f"data_scaling.py: --sizes and --seeds are comma-separated integers, got {args.sizes!r}, {args.seeds!r}")
        for n in sizes:
            (args.out / f"n{n}").mkdir(parents=True, exist_ok=True)
            for seed in seeds:
                train((args.out / f"n{n}").resolve(), "keypoints", "imf", 1, seed, args.minutes, args.threads,
                      [f"data.demo_episodes={n}"])
    records = collect(args.collect or args.out)
    lines = table(records)
    print("\n".join(lines))
    (RESULTS_DIR / "data_scaling.json").write_text(json.dumps(records, indent=1) + "\n")
    plot(records, ROOT / "docs" / "data_scaling.png")
    write_section(SECTION, lines)


if __name__ == "__main__":
    main()
