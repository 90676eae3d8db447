"""benchmarks/learning/learning.py --add: runs trained later (a missing seed) join the committed record,
whose runs stay, each marked with the record and commit it came from."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import learning  # noqa: E402


def _run(objective: str, seed: int, score: float = 0.7) -> dict:
    steps = 100 if objective == "ddpm" else 1
    return {"id": f"learning-keypoints-{objective}-{steps}-s{seed}", "obs": "keypoints", "objective": objective,
            "sample_steps": steps, "seed": seed, "budget_s": 900.0, "steps": 7000, "samples": 900_000,
            "train_min": 15.0, "label": f"{objective}, seed {seed}", "best_test_score": score,
            "best_test_score_se": 0.02, "best_test_success": 0.1, "holdout_score": score, "eval_s": 2.0}


@pytest.fixture
def record(tmp_path, monkeypatch):
    monkeypatch.setattr(learning, "RESULTS_DIR", tmp_path)
    old = [_run("ddpm", 42), _run("flow", 43), _run("imf", 42), _run("imf", 43)]
    (tmp_path / "keypoints.json").write_text(json.dumps(old))
    return tmp_path


def test_new_runs_join_the_record_whose_runs_stay_marked_with_where_they_came_from(record):
    merged = learning.added_records("keypoints", [_run("flow", 42), _run("ddpm", 43)])
    assert [(r["objective"], r["seed"]) for r in merged] == [
        ("ddpm", 42), ("ddpm", 43), ("flow", 42), ("flow", 43), ("imf", 42), ("imf", 43)]
    kept = [r for r in merged if r.get("from")]
    assert [(r["objective"], r["seed"]) for r in kept] == [("ddpm", 42), ("flow", 43), ("imf", 42), ("imf", 43)]
    assert all(r["from"].startswith("keypoints.json at ") for r in kept)
    assert not any("from" in r for r in merged if (r["objective"], r["seed"]) in {("flow", 42), ("ddpm", 43)})


def test_a_new_run_replaces_the_old_run_of_the_same_id_and_an_earlier_mark_stays(record):
    old = json.loads((record / "keypoints.json").read_text())
    old[2]["from"] = "keypoints.json at abc1234"
    (record / "keypoints.json").write_text(json.dumps(old))
    merged = learning.added_records("keypoints", [_run("flow", 43, score=0.9)])
    flows = [r for r in merged if r["objective"] == "flow"]
    assert len(flows) == 1 and flows[0]["holdout_score"] == 0.9 and "from" not in flows[0]
    assert next(r for r in merged if r["objective"] == "imf" and r["seed"] == 42)["from"] == "keypoints.json at abc1234"


def test_add_to_a_record_that_is_not_there_is_one_line(record):
    with pytest.raises(SystemExit, match="--add: no record .*nothing.json"):
        learning.added_records("nothing", [_run("flow", 42)])


def test_the_table_says_which_runs_were_recorded_before(record):
    merged = learning.added_records("keypoints", [_run("flow", 42)])
    for r in merged:
        r.update(best_test_success=0.1)
    text = "\n".join(learning.table(merged, "keypoints", "x86_64, 2 cores", "keypoints"))
    assert "runs marked from keypoints.json at " in text and "their run folders are gone" in text
    assert text.count("| flow, seed 42 |") == 1
