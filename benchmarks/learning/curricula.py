"""The curricula against none at equal compute: pusht_lowdim_cpu's budget, two training seeds.

    python benchmarks/learning/curricula.py --seeds 42,43 --threads 1     # easy_first and doubling, then record
    python benchmarks/learning/curricula.py --collect runs/curricula       # runs already trained: record them

Each run is benchmarks/learning/learning.py's trial (imf at one step, 15 minutes on the cpu clock, best.pt
on 200 selection seeds, one look at the holdout) with `data.curriculum=<name>` and the options
below, fixed before any run. The baseline, curriculum none, is the same preset's runs at the same
seeds in benchmarks/learning_results/keypoints.json. benchmarks/claims/claims.py writes the reading
(benchmarks/claims/claims_data.py): a curriculum is adopted only when it beats none beyond noise on the
selection seeds at every training seed; the holdout is reported, never chosen by. Writes
benchmarks/learning_results/curricula.json, its RESULTS.md table and docs/curricula_curves.png
(test score and success against training minutes and samples, none beside each curriculum).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

from learning import RESULTS_DIR, ROOT, plot, train

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402
from run_record import read_record, read_records  # noqa: E402

SECTION = "## Curricula, keypoints (benchmarks/learning/curricula.py)"
OPTIONS = {"easy_first": [], "doubling": ["data.curriculum_options.at_epochs=6,12"]}  # chosen before the runs


def record_of(run_dir: Path) -> dict:
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    record = read_record(run_dir)
    record.update(curriculum=config["data"].get("curriculum", "none"),
                  curriculum_options=config["data"].get("curriculum_options") or {},
                  demo_episodes=config["data"]["demo_episodes"])
    if "holdout_score" not in record or "selection_score" not in record:
        sys.exit(f"curricula.py: {run_dir} lacks final_eval.json or holdout.json")
    return record


def collect(folder: Path) -> list[dict]:
    runs = sorted({Path(root).resolve() for root, _, files in os.walk(folder, followlinks=True)
                   if "holdout.json" in files})
    if not runs:
        sys.exit(f"curricula.py: no run folder with a holdout look under {folder}")
    return sorted((record_of(r) for r in runs), key=lambda r: (r["curriculum"], r["seed"]))


def none_runs(records: list[dict]) -> list[dict]:
    """The baseline: the preset's own imf runs (curriculum none) at the seeds the curricula ran."""
    seeds = {r["seed"] for r in records}
    return [dict(r, curriculum="none") for r in read_records(RESULTS_DIR / "keypoints.json")
            if r["objective"] == "imf" and r["seed"] in seeds]


def lines_of(records: list[dict]) -> list[str]:
    lines = [SECTION, "",
             "`python benchmarks/learning/curricula.py`: pusht_lowdim_cpu (imf, one step, 500 scripted demonstrations, "
             "15 minutes on the cpu clock, one torch thread a run, nice'd, two runs at a time on the shared "
             "2-core machine) with a curriculum, against curriculum none (the preset's own runs, "
             "benchmarks/learning_results/keypoints.json) at the same training seed. Options fixed before the "
             "runs: easy_first by episode length, from the shortest 25% to all by half the budget; doubling "
             "from a quarter of the episodes, doubling after epochs 6 and 12. Selection: 200 seeds, what "
             "adoption is decided on; holdout: 200 seeds, one look a run.", "",
             "| curriculum | seed | samples | selection coverage | selection success | holdout coverage | "
             "holdout success |", "|---|---|---|---|---|---|---|"]
    for r in none_runs(records) + records:
        lines.append(f"| {r['curriculum']} | {r['seed']} | {r['samples'] / 1e6:.2f}M | "
                     f"{r['selection_score']:.3f} ± {r['selection_score_se']:.3f} | "
                     f"{r['selection_success']:.3f} ± {r['selection_success_se']:.3f} | "
                     f"{r['holdout_score']:.3f} ± {r['holdout_score_se']:.3f} | "
                     f"{r['holdout_success']:.3f} ± {r['holdout_success_se']:.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--curricula", default="easy_first,doubling")
    parser.add_argument("--seeds", default="42,43")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "curricula")
    parser.add_argument("--collect", type=Path, help="record the runs under this folder instead of training")
    args = parser.parse_args()
    if not args.collect:
        unknown = [c for c in args.curricula.split(",") if c not in OPTIONS]
        if unknown:
            sys.exit(f"curricula.py: --curricula {unknown[0]!r}: allowed {', '.join(OPTIONS)}")
        for name in args.curricula.split(","):
            (args.out / name).mkdir(parents=True, exist_ok=True)
            for seed in (int(s) for s in args.seeds.split(",")):
                train((args.out / name).resolve(), "keypoints", "imf", 1, seed, 15.0, args.threads,
                      [f"data.curriculum={name}", *OPTIONS[name]])
    records = collect(args.collect or args.out)
    lines = lines_of(records)
    print("\n".join(lines))
    (RESULTS_DIR / "curricula.json").write_text(json.dumps(records, indent=1) + "\n")
    plot([dict(r, label=f"{r['curriculum']}, seed {r['seed']}") for r in none_runs(records) + records],
         ROOT / "docs" / "curricula_curves.png", "pusht_lowdim_cpu with a curriculum: the 50 test seeds during training")
    write_section(SECTION, lines)


if __name__ == "__main__":
    main()
