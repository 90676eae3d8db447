"""What buys learning per CPU-second: one change at a time against the same baseline and budget.

    python benchmarks/ablation.py run NAME [key=value ...] [--minutes 30] [--threads 1] [--out DIR]
    python benchmarks/ablation.py table DIR [--baseline NAME] [--no-write]

`run` trains one `imf trial` of a preset (default pusht_lowdim_cpu) with the overrides, for a
budget on the cpu clock (CPU seconds / torch threads: the same training on a shared machine),
nice'd, and re-scores its best.pt on 200 fresh seeds (500000..). Settings are chosen on the
50 test seeds (the trial's rollouts); the fresh-seed columns are the report, never the choice.
`table` reads every run folder under DIR into the ablation table of benchmarks/RESULTS.md and
benchmarks/learning_results/ablations_<obs>.json: change, steps, samples/s, best test score and
success (± SE over the 50 test seeds), fresh-seed coverage and success (± SE over 200).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import yaml
from results_file import write_section

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "learning_results"
FRESH = 200


def run(name: str, overrides: list[str], minutes: float, threads: int, out: Path, preset: str) -> int:
    cmd = [sys.executable, "-m", "imf", "trial", preset, f"training.time_budget_s={minutes * 60:g}",
           "training.budget_clock=cpu", "logging.trackers=none", *overrides,
           "--out", str(out / name), "--id", name, "--store", "none", "--final-eval", str(FRESH)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.out", "w") as log:
        print("$ " + " ".join(cmd[1:]), flush=True)
        return subprocess.call(["nice", "-n", "10", *cmd], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)


def _se(values: list[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def read_run(folder: Path) -> dict | None:
    """One run folder's row: its change, speed, best test rollout and fresh-seed scores."""
    if not (folder / "summary.json").is_file():
        return None
    summary = json.loads((folder / "summary.json").read_text())
    config = yaml.safe_load((folder / "config.yaml").read_text())
    rows = [json.loads(line) for line in (folder / "logs.json.txt").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "epoch" in r and not r.get("diverged")]
    scored = [r for r in rows if "test_mean_score" in r]
    if not scored:
        return None
    best = max(scored, key=lambda r: r["test_mean_score"])
    per_seed = list(best.get("test_per_seed", {}).values())
    p = best.get("test_success_rate") or 0.0
    batch = config["training"]["batch_size"]
    last = rows[-1]
    entry = {
        "name": summary["id"], "obs": config["policy"]["obs_type"],
        "change": [o for o in summary.get("overrides", []) if not o.startswith(
            ("training.time_budget_s=", "training.budget_clock=", "logging.swanlab=", "logging.trackers="))],
        "steps": last["global_step"], "train_min": last.get("train_s", 0) / 60,
        "samples_s": last["global_step"] * batch / max(1e-9, last.get("train_s", 0)),
        "best": best["test_mean_score"], "best_se": _se(per_seed), "best_epoch": best["epoch"],
        "best_success": p, "best_success_se": math.sqrt(p * (1 - p) / max(1, len(per_seed))),
        "curve": [[r.get("train_s", 0) / 60, r["test_mean_score"], r.get("test_success_rate")] for r in scored],
        "status": summary["status"],
    }
    fresh = folder / "final_eval.json"
    if fresh.is_file():
        f = json.loads(fresh.read_text())
        entry.update(fresh_score=f["mean"], fresh_se=f["se"], fresh_success=f.get("success_rate"),
                     fresh_success_se=f.get("success_se"), fresh_episodes=f["episodes"])
    return entry


def _pm(value: float | None, se: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" + (f" ± {se:.{digits}f}" if se is not None else "")


def table(folder: Path, baseline: str | None, write: bool) -> str:
    entries = [e for e in (read_run(d) for d in sorted(folder.iterdir()) if d.is_dir()) if e]
    if not entries:
        sys.exit(f"ablation.py: no scored run folders under {folder}")
    entries.sort(key=lambda e: (e["name"] != baseline, e["name"]))
    obs = entries[0]["obs"]
    section = f"## Ablations, {obs} (benchmarks/ablation.py)"
    lines = [section, "", f"`python benchmarks/ablation.py run NAME key=value ...` per row, then "
             f"`table`; 1 torch thread per run, budget on the cpu clock (each run's own CPU seconds, so "
             f"runs sharing the 2 cores get the same training), best.pt re-scored on {FRESH} fresh seeds "
             f"(500000..). Scores are mean coverage ± SE; success ± SE (binomial on the 50 test seeds).",
             "", "| run | change | steps | samples/s | best test score | best success | fresh coverage | fresh success |",
             "|---|---|---|---|---|---|---|---|"]
    for e in entries:
        change = ", ".join(f"`{c}`" for c in e["change"]) or "(baseline)"
        lines.append(f"| {e['name']} | {change} | {e['steps']} | {e['samples_s']:.0f} | "
                     f"{_pm(e['best'], e['best_se'])} | {_pm(e['best_success'], e['best_success_se'], 2)} | "
                     f"{_pm(e.get('fresh_score'), e.get('fresh_se'))} | "
                     f"{_pm(e.get('fresh_success'), e.get('fresh_success_se'), 3)} |")
    text = "\n".join(lines) + "\n"
    if write:
        write_section(section, text)
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / f"ablations_{obs}.json").write_text(json.dumps(entries, indent=1) + "\n")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("name")
    r.add_argument("overrides", nargs="*")
    r.add_argument("--minutes", type=float, default=30.0)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--preset", default="pusht_lowdim_cpu")
    r.add_argument("--out", type=Path, default=ROOT / "runs" / "ablations")
    t = sub.add_parser("table")
    t.add_argument("folder", type=Path)
    t.add_argument("--baseline", default=None)
    t.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.what == "run":
        sys.exit(run(args.name, args.overrides, args.minutes, args.threads, args.out, args.preset))
    print(table(args.folder, args.baseline, not args.no_write))


if __name__ == "__main__":
    main()
