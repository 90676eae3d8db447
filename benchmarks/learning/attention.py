"""The mission's question on this machine: causal vs full attention across width x depth.

Reads two finished sweeps (the same grid and seeds, `imf sweep --mask causal` and `--mask full`)
through imf's report API, looks once at the holdout seeds with each sweep's best trial (chosen on
the selection seeds), keeps the sweep folders without their checkpoints and tracker files, and
writes benchmarks/learning_results/attention.json, which claims_attention.py renders.

    python benchmarks/learning/attention.py look runs/attn/causal runs/attn/full      # one holdout look each
    python benchmarks/learning/attention.py collect runs/attn/causal runs/attn/full   # the JSON and the copies

How the sweeps were run (README, "Causal or full attention?"): keypoints (pusht_lowdim_cpu, 4 heads
on both sides), n_emb 32,64,128 x n_layer 2,4, seeds 42 and 43, 10 epochs of 250 steps (equal
epochs; no time budget), one torch thread a trial, best.pt re-scored on 200 selection seeds.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from imf.report import build_comparison, build_report, render_compare_text, write_compare_files
from imf.store import CHECKPOINTS, SWANLOG

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "attention"
JSON = ROOT / "benchmarks" / "learning_results" / "attention.json"
HOLDOUT_EPISODES = 200
Z = 1.96
NOT_KEPT = (CHECKPOINTS, SWANLOG, "tensorboard", "wandb", "*.lock", "pid", "exit_code")


def best_by_selection(sweep: Path) -> Any:
    """The sweep's trial with the highest selection score (the choice the holdout look follows)."""
    trials = [t for t in build_report([sweep]).trials if t.selection is not None]
    if not trials:
        raise SystemExit(f"attention.py: no trial of {sweep} has a selection score (final_eval.json)")
    return max(trials, key=lambda t: t.selection)


def look(sweeps: list[Path]) -> None:
    """One holdout look per sweep, at its best trial's best.pt, through `imf eval --holdout`."""
    for sweep in sweeps:
        best = best_by_selection(sweep)
        checkpoint = Path(best.run_dir) / CHECKPOINTS / "best.pt"
        print(f"{sweep.name}: best on the selection seeds is {best.id} ({best.selection:.3f}); "
              f"looking at the holdout with {checkpoint}", flush=True)
        subprocess.run([sys.executable, "-m", "imf", "eval", str(checkpoint), "--holdout",
                        "--n-test", str(HOLDOUT_EPISODES)], check=True)


def _settings(run_dir: str) -> dict[str, Any]:
    """The settings the passages quote, from the run's own config.yaml."""
    cfg = yaml.safe_load((Path(run_dir) / "config.yaml").read_text(encoding="utf-8"))
    return {"preset": cfg["name"], "n_head": cfg["policy"]["n_head"], "epochs": cfg["training"]["num_epochs"],
            "steps_per_epoch": cfg["training"]["max_train_steps"], "batch_size": cfg["training"]["batch_size"],
            "time_budget_s": cfg["training"]["time_budget_s"], "obs_type": cfg["policy"]["obs_type"]}


def _run(row: Any, mask: str) -> dict[str, Any]:
    return {**_settings(row.run_dir), "id": row.id, "mask": mask, "n_emb": row.n_emb, "n_layer": row.n_layer,
            "seed": row.seed, "rollouts": row.rollouts, "test_episodes": row.episodes,
            "status": row.status, "final_epoch": row.final_epoch, "max_test": row.best_score,
            "max_test_se": row.best_se, "best_epoch": row.best_epoch, "success_at_max": row.success_rate,
            "selection": row.selection, "selection_se": row.selection_se,
            "selection_success": row.selection_success, "selection_episodes": row.selection_episodes,
            "steps": row.steps, "samples": row.samples, "holdout": row.holdout, "holdout_se": row.holdout_se,
            "holdout_success": row.holdout_success, "holdout_episodes": row.holdout_episodes,
            "holdout_looks": row.holdout_looks}


def _gap(a: float | None, a_se: float | None, b: float | None, b_se: float | None) -> dict[str, Any] | None:
    if None in (a, a_se, b, b_se):
        return None
    diff, se = a - b, math.hypot(a_se, b_se)
    z = diff / se if se > 0 else 0.0
    return {"diff": diff, "se": se, "z": z, "beyond": abs(z) > Z}


def _cells(causal: Any, full: Any) -> list[dict[str, Any]]:
    """Per (n_emb, n_layer): each side's mean over seeds (max test and selection) and causal - full."""
    by_size = {}
    for mask, report in (("causal", causal), ("full", full)):
        for cell in report.trends.cells:
            by_size.setdefault((cell.n_emb, cell.n_layer), {})[mask] = cell
    out = []
    for (n_emb, n_layer), sides in sorted(by_size.items()):
        c, f = sides.get("causal"), sides.get("full")
        row = {"n_emb": n_emb, "n_layer": n_layer}
        for mask, cell in (("causal", c), ("full", f)):
            row[mask] = None if cell is None else {
                "n": cell.n, "seeds": cell.seeds, "max_mean": cell.mean, "max_se": cell.se,
                "selection": cell.selection, "selection_se": cell.selection_se, "selection_n": cell.selection_n,
                "selection_success": cell.selection_success}
        if c is not None and f is not None:
            row["max_gap"] = _gap(c.mean, c.se, f.mean, f.se)
            row["selection_gap"] = _gap(c.selection, c.selection_se, f.selection, f.selection_se)
        out.append(row)
    return out


def _copy(sweep: Path, to: Path) -> None:
    """The sweep folder without checkpoints, tracker files and lock or pid files."""
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(sweep, to, ignore=shutil.ignore_patterns(*NOT_KEPT))


def collect(causal_dir: Path, full_dir: Path) -> None:
    causal, full = build_report([causal_dir]), build_report([full_dir])
    OUT.mkdir(parents=True, exist_ok=True)
    _copy(causal_dir, OUT / "causal")
    _copy(full_dir, OUT / "full")
    kept = OUT.relative_to(ROOT)  # the compare names the committed copies, read from the root
    os.chdir(ROOT)
    comparison = build_comparison(kept / "causal", kept / "full")
    (OUT / "compare.txt").write_text(render_compare_text(comparison) + "\n", encoding="utf-8")
    write_compare_files(comparison, OUT)  # compare.md, .json, .csv as `imf report A B` writes them
    runs = [_run(t, "causal") for t in causal.trials] + [_run(t, "full") for t in full.trials]
    looks = [r for r in runs if r["holdout_looks"]]
    data = {"how": __doc__.split("How the sweeps were run")[1].split('"""')[0].strip(),
            "runs": runs, "cells": _cells(causal, full), "holdout": looks,
            "causal_best": best_by_selection(causal_dir).id, "full_best": best_by_selection(full_dir).id}
    JSON.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {JSON.relative_to(ROOT)}, {OUT.relative_to(ROOT)}/causal, full and compare.txt/.md/.json/.csv "
          f"({len(runs)} runs, {len(looks)} holdout look(s))")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("look", "collect"))
    parser.add_argument("causal", type=Path)
    parser.add_argument("full", type=Path)
    args = parser.parse_args()
    for folder in (args.causal, args.full):
        if not (folder / "sweep.json").is_file():
            raise SystemExit(f"attention.py: {folder} is not a sweep folder (no sweep.json)")
    if args.what == "look":
        look([args.causal, args.full])
    else:
        collect(args.causal, args.full)


if __name__ == "__main__":
    main()
