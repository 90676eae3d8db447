"""benchmarks/learning/run_record.py: what the benchmarks' JSON records of a run folder."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "learning"))

from run_record import read_record, upgrade  # noqa: E402


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "r"
    run.mkdir()
    config = {"name": "pusht_lowdim_cpu", "policy": {"obs_type": "keypoints"},
              "objective": {"name": "imf", "sample_steps": 1},
              "training": {"seed": 43, "batch_size": 128, "time_budget_s": 900, "budget_clock": "cpu"}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    (run / "summary.json").write_text(json.dumps({"id": "r", "status": "completed", "overrides": []}))
    rows = [{"epoch": 0, "global_step": 250, "train_s": 60, "test_mean_score": 0.5, "test_success_rate": 0.30,
             "test_per_seed": {"1": 0.4, "2": 0.6}},
            {"epoch": 1, "global_step": 500, "train_s": 120, "test_mean_score": 0.7, "test_success_rate": 0.10,
             "test_per_seed": {"1": 0.6, "2": 0.8}}]
    (run / "logs.json.txt").write_text("".join(json.dumps(r) + "\n" for r in rows))
    look = {"mean": 0.6, "se": 0.05, "success_rate": 0.5, "success_se": 0.25, "episodes": 4, "seed_start": 900000,
            "per_seed": [1.0, 0.95, 0.3, 0.15], "per_seed_success": [1.0, 0.0, 0.0, 0.0]}
    (run / "holdout.json").write_text(json.dumps({"version": 1, "looks": [look]}))
    return run


def test_the_best_checkpoints_success_is_its_rollouts_not_the_best_success_of_any(tmp_path):
    record = read_record(_run(tmp_path))
    assert record["best_test_score"] == 0.7 and record["best_test_success"] == 0.10  # not 0.30
    assert record["best_epoch"] == 2 and record["best_test_score_se"] == pytest.approx(0.1)
    assert (record["steps"], record["samples"], record["budget_s"], record["seed"]) == (500, 64000, 900, 43)
    assert record["curve"] == [[1.0, 32000, 0.5, 0.30], [2.0, 64000, 0.7, 0.10]]
    assert (record["holdout_score"], record["holdout_looks"], record["holdout_near_misses"]) == (0.6, 1, 1)
    assert "selection_score" not in record  # no final_eval.json: nothing invented


def test_old_records_read_with_todays_keys():
    old = {"fresh_score": 0.8, "fresh_se": 0.01, "fresh_success": 0.2, "best": 0.9, "best_success": 0.3}
    assert upgrade(old) == {"selection_score": 0.8, "selection_score_se": 0.01, "selection_success": 0.2,
                            "best_test_score": 0.9, "best_test_success": 0.3}
