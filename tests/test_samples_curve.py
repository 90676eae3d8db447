"""Holdout looks at kept snapshots are a curve's points: recorded in holdout.json with every other
look, never read as the run's claim, counted apart by the report; benchmarks/learning/samples_to_threshold.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from imf.store.holdout import append_look, read_looks
from imf.store.layout import run_dir_of

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

from samples_to_threshold import first_reach, merged, spread  # noqa: E402


def _look(checkpoint: str, mean: float) -> dict:
    return {"checkpoint": checkpoint, "mean": mean, "se": 0.01, "success_rate": 0.5, "success_se": 0.1,
            "episodes": 2, "seed_start": 900000, "per_seed": [mean, mean], "per_seed_success": [1.0, 0.0]}


def test_snapshot_looks_are_a_curve_not_the_claim(tmp_path):
    append_look(tmp_path, _look("checkpoints/best.pt", 0.7))
    append_look(tmp_path, _look("checkpoints/snapshots/epoch=0003.pt", 0.4))
    append_look(tmp_path, _look("checkpoints/snapshots/epoch=0007.pt", 0.9))
    looks = read_looks(tmp_path)
    assert len(looks.looks) == 3  # every look is on the record
    assert looks.latest["checkpoint"] == "checkpoints/best.pt" and looks.checkpoints == {"checkpoints/best.pt"}
    assert [c["mean"] for c in looks.curve] == [0.4, 0.9]


def test_a_snapshot_belongs_to_the_run_above_checkpoints(tmp_path):
    assert run_dir_of(tmp_path / "run" / "checkpoints" / "snapshots" / "epoch=0001.pt") == tmp_path / "run"
    assert run_dir_of(tmp_path / "run" / "checkpoints" / "best.pt") == tmp_path / "run"
    assert run_dir_of(tmp_path / "loose" / "snapshots" / "x.pt") == tmp_path / "loose" / "snapshots"


def test_spread_keeps_the_last_snapshot_and_first_reach_reads_the_first_crossing():
    found = [(s, Path(f"{s}.pt")) for s in range(100, 1100, 100)]
    assert [s for s, _ in spread(found, 3)] == [300, 700, 1000]
    assert spread(found[:2], 5) == found[:2]
    points = [{"samples": 1, "coverage": 0.7, "success": 0.3}, {"samples": 2, "coverage": 0.85, "success": 0.1},
              {"samples": 3, "coverage": 0.82, "success": 0.25}]
    assert first_reach(points, 0.8, 0.2) == {"coverage": 2, "success": 1, "both": 3}
    assert first_reach(points, 0.9, 0.2)["both"] is None


def test_committed_curves_stay_and_a_run_measured_again_replaces_its_own():
    old = [{"run": "/gone/a", "points": [1]}, {"run": "/here/b", "points": [2]}]
    new = [{"run": "/here/b", "points": [3]}, {"run": "/here/c", "points": [4]}]
    assert merged(new, old) == [{"run": "/gone/a", "points": [1]}, *new]
    assert merged(new, []) == new


def test_the_run_record_and_the_report_skip_curve_looks(tmp_path):
    from imf.report.collect import read_holdout
    from imf.report.model import TrialRow
    from run_record import read_record
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.yaml").write_text(json.dumps({"name": "smoke", "policy": {"obs_type": "image"}, "objective": {"name": "imf", "sample_steps": 1}, "training": {"batch_size": 8, "seed": 42}}))
    (run / "summary.json").write_text(json.dumps({"id": "r", "status": "completed", "overrides": []}))
    (run / "logs.json.txt").write_text(json.dumps({"epoch": 0, "global_step": 3, "train_s": 1.0}) + "\n")
    append_look(run, _look("checkpoints/best.pt", 0.7))
    append_look(run, _look("checkpoints/snapshots/epoch=0000.pt", 0.95))
    assert read_record(run)["holdout_score"] == 0.7
    row = TrialRow(id="r", run_dir=str(run), source="imf", status="completed")
    read_holdout(row, run, [])
    assert (row.holdout, row.holdout_looks, row.holdout_curve_looks, row.holdout_checkpoints) == (0.7, 1, 1, 1)


@pytest.mark.slow
def test_samples_to_threshold_looks_once_per_snapshot_and_reads_back(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = tmp_path / "run"
    trial = subprocess.run([sys.executable, "-m", "imf", "trial", "smoke", "training.num_epochs=3",
                            "training.snapshot_every=1", "training.max_train_steps=3", "training.batch_size=8",
                            "eval.n_test=2", "eval.n_train=0", "eval.max_steps=16", "data.demo_episodes=4",
                            f"data.cache_dir={tmp_path / 'cache'}", "logging.trackers=none",
                            "--out", str(run), "--store", "none", "--final-eval", "2", "--holdout"],
                           cwd=ROOT, env=env, text=True, capture_output=True)
    assert trial.returncode == 0, trial.stderr[-2000:]
    script = [sys.executable, str(ROOT / "benchmarks" / "learning" / "samples_to_threshold.py"), str(run),
              "--points", "2", "--episodes", "2", "--no-write"]
    first = subprocess.run(script, cwd=ROOT, env=env, text=True, capture_output=True)
    assert first.returncode == 0, first.stderr[-2000:]
    looks = read_looks(run)
    assert [c["checkpoint"] for c in looks.curve] == ["checkpoints/snapshots/epoch=0000.pt",
                                                      "checkpoints/snapshots/epoch=0002.pt"]
    assert looks.latest["checkpoint"].endswith("best.pt")  # the claim is still best.pt's look
    again = subprocess.run(script, cwd=ROOT, env=env, text=True, capture_output=True)
    assert again.returncode == 0 and len(read_looks(run).looks) == 3  # read back, not looked at again
    assert "| image: imf, 1 step, seed 42 (" in again.stdout
    for folder, says in ((tmp_path / "cache", "is not a run folder (no summary.json)"),
                         (_without_snapshots(run, tmp_path / "plain"), "kept no snapshots")):
        bad = subprocess.run([*script[:2], str(folder)], cwd=ROOT, env=env, text=True, capture_output=True)
        assert bad.returncode != 0 and says in bad.stderr and "Traceback" not in bad.stderr


def _without_snapshots(run: Path, copy: Path) -> Path:
    import shutil
    shutil.copytree(run, copy)
    shutil.rmtree(copy / "checkpoints" / "snapshots")
    return copy
