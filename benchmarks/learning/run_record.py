"""One trained run folder as the benchmarks' JSON records it (benchmarks/learning_results/*.json).

Each record holds what a claim needs and where it came from: ``obs``, ``preset``, ``objective``
(with its sampling steps), ``seed``, ``budget_s`` and its clock, ``steps`` and ``samples``
(optimizer steps x batch), the best checkpoint on the test seeds (its score and success: the
rollout that chose it, not the maximum of each over rollouts), ``selection_*`` (final_eval.json:
the run's final checkpoint, best.pt unless eval.final_checkpoint says latest, on the selection seeds)
and ``holdout_*`` (the latest look in holdout.json), each with its ``_se`` and the checkpoint scored, and the curve: [minutes, samples, score, success] per rollout.

The run folder is read through the store's face (its layout, log, JSON and YAML readers and
the holdout ledger), as ``imf report`` reads it: no parsing of a run's files of its own.

A record is a kind of file (imf/upgrade.py, ``KIND``): old records (``fresh_*``, from before the
seed ranges had names, and ``best*``) read with today's keys through its named step (``upgrade``;
``read_records`` upgrades a JSON file of records and writes it back once).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_text
from imf.store import samples_trained
from imf.store import RunLayout, is_epoch_row, read_json_object, read_log, read_looks, read_yaml_mapping
from imf.upgrade import FileKind, Step, write_back

NEAR = 0.9  # an episode scoring this much (coverage / 0.95) without success is a near miss

RENAMED = {"fresh_score": "selection_score", "fresh_se": "selection_score_se",
           "fresh_success": "selection_success", "fresh_success_se": "selection_success_se",
           "fresh_episodes": "selection_episodes", "best": "best_test_score", "best_se": "best_test_score_se",
           "best_success": "best_test_success"}


def _seed_ranges_named(record: dict[str, Any]) -> dict[str, Any]:
    return {RENAMED.get(k, k): v for k, v in record.items()}


# A record keeps no version (its keys are the table's): the step runs on every read and leaves
# today's keys as they are.
KIND = FileKind("result record", (Step(1, "fresh_* named selection_*, best* named best_test_*", _seed_ranges_named),),
                key="")


def upgrade(record: dict[str, Any]) -> dict[str, Any]:
    """A record written before the seed ranges were named, with today's keys."""
    return KIND.upgrade(record)


def read_records(path: Path) -> list[Any]:
    """The records of the JSON list in ``path``, each with today's keys; a file holding an old one
    is written back once with today's keys (atomically) and a line on stderr names the change."""
    path = Path(path)
    rows = json.loads(path.read_text())
    reads = [KIND.read(r) if isinstance(r, dict) else None for r in rows]
    upgraded = [read.data if read else row for read, row in zip(reads, rows)]
    changed = sorted({name for read in reads if read for name in read.changed})
    if changed:
        write_back(path, f"{path}: {KIND.name}s upgraded: " + "; ".join(changed),
                   lambda p: atomic_write_text(p, json.dumps(upgraded, indent=1) + "\n"))  # as the benchmarks write it
    return upgraded


def log_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The run's finished epochs' log rows (the store's log reader; a diverged epoch's marker left out)."""
    return [r for r in read_log(RunLayout(Path(run_dir)).logs).rows if is_epoch_row(r)]


def _episodes_se(per_seed: list[float]) -> float | None:
    n = len(per_seed)
    if n < 2:
        return None
    mean = sum(per_seed) / n
    return math.sqrt(sum((v - mean) ** 2 for v in per_seed) / (n - 1) / n)


def _scored(data: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {f"{prefix}_score": data["mean"], f"{prefix}_score_se": data["se"],
            f"{prefix}_success": data["success_rate"], f"{prefix}_success_se": data["success_se"],
            f"{prefix}_episodes": data["episodes"], f"{prefix}_seed_start": data["seed_start"]}


def read_record(run_dir: Path) -> dict[str, Any]:
    """The record of ``run_dir`` (a finished imf trial); KeyError/OSError/ValueError when it is not one."""
    run_dir = Path(run_dir)
    files = RunLayout(run_dir)
    config = read_yaml_mapping(files.config)
    summary = read_json_object(files.summary)
    rows = log_rows(run_dir)
    scored = [r for r in rows if "test_mean_score" in r]
    batch = config["training"]["batch_size"]
    objective = config["objective"]
    steps = (objective.get("options") or {}).get("steps") if objective["name"] == "ddpm" else objective.get("sample_steps")
    best = max(scored, key=lambda r: r["test_mean_score"]) if scored else None
    last = rows[-1] if rows else {}
    record: dict[str, Any] = {
        "id": summary["id"], "obs": config["policy"]["obs_type"], "preset": config["name"],
        "objective": objective["name"], "sample_steps": steps, "seed": config["training"]["seed"],
        "budget_s": config["training"].get("time_budget_s"), "budget_clock": config["training"].get("budget_clock"),
        "status": summary["status"], "steps": last.get("global_step", 0),
        "samples": samples_trained(last, batch) or 0, "train_min": last.get("train_s", 0.0) / 60,
        "overrides": summary.get("overrides", []),
        "best_test_score": best["test_mean_score"] if best else None,
        "best_test_score_se": _episodes_se(list(best.get("test_per_seed", {}).values())) if best else None,
        "best_test_success": best.get("test_success_rate") if best else None,  # of the chosen checkpoint
        "best_epoch": best["epoch"] + 1 if best else None,
        "curve": [[r.get("train_s", 0.0) / 60, samples_trained(r, batch), r["test_mean_score"],
                   r.get("test_success_rate")] for r in scored],
    }
    if files.final_eval.is_file():
        final = read_json_object(files.final_eval)
        record.update(_scored(final, "selection"), selection_checkpoint=final.get("checkpoint"))
    looks = read_looks(run_dir)
    latest = looks.latest  # the claim's look: snapshots' looks are a curve's points
    if latest is not None:
        near = sum(1 for score, won in zip(latest["per_seed"], latest["per_seed_success"]) if score >= NEAR and not won)
        record.update(_scored(latest, "holdout"), holdout_looks=len(looks.looks), holdout_near_misses=near,
                      holdout_checkpoint=latest.get("checkpoint"))
    return record


def figure_name(record: str) -> str:
    """The file under docs/ of a record's curves (learning.py --name RECORD draws it)."""
    return "learning_curves.png" if record == "keypoints" else f"learning_curves_{record}.png"
