"""benchmarks/learning/learning.py --collect: the look at runs already trained, at the checkpoint their
final evaluation scored, and --final-checkpoint to score another one first."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from imf_process import run_imf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import learning  # noqa: E402

TINY = ["training.max_train_steps=4", "training.batch_size=16", "eval.n_test=2", "eval.n_train=1",
        "eval.max_steps=24", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false",
        "training.num_epochs=2"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished tiny trial whose final evaluation scored best.pt on 3 selection seeds."""
    folder = tmp_path_factory.mktemp("collect")
    run_dir = folder / "runs" / "imf-2-s42"
    proc = run_imf("trial", "smoke", *TINY, f"data.cache_dir={folder / 'cache'}", "--out", str(run_dir),
                   "--store", "none", "--final-eval", "3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return run_dir


@pytest.mark.slow
def test_final_checkpoint_latest_rescores_the_selection_seeds_and_the_look_follows(trained, monkeypatch):
    before = json.loads((trained / "final_eval.json").read_text())
    assert before["checkpoint"] == "checkpoints/best.pt"
    learning.rescore_final(trained, "latest")
    after = json.loads((trained / "final_eval.json").read_text())
    assert after["checkpoint"] == "checkpoints/latest.pt" and after["episodes"] == 3
    assert after["seed_start"] == before["seed_start"]
    assert learning.read_record(trained)["selection_checkpoint"] == "checkpoints/latest.pt"
    looked = []
    monkeypatch.setattr(learning, "_imf", lambda args, threads, **kw: looked.append(args) or
                        subprocess.CompletedProcess(args, 0))
    learning.look_at_holdout(trained, 1)
    [args] = looked
    assert args[:2] == ["eval", str(trained / "checkpoints" / "latest.pt")] and "--holdout" in args
    learning.rescore_final(trained, "latest")  # already there: nothing scored again
    assert json.loads((trained / "final_eval.json").read_text()) == after


def test_the_table_names_the_checkpoint_its_runs_scored():
    assert learning.scored_name([{"selection_checkpoint": "checkpoints/latest.pt"}] * 2) == "latest.pt"
    assert learning.scored_name([{}, {"selection_checkpoint": "checkpoints/best.pt"}]) == "best.pt"
    assert "each run's final checkpoint" in learning.scored_name(
        [{"selection_checkpoint": "checkpoints/latest.pt"}, {}])


def test_final_checkpoint_without_collect_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["learning.py", "--final-checkpoint", "latest", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="--final-checkpoint re-scores runs already trained: give --collect DIR"):
        learning.main()
    assert list(tmp_path.iterdir()) == []


def test_final_checkpoint_of_a_run_without_a_final_eval_is_one_line(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(SystemExit, match="has no final_eval.json"):
        learning.rescore_final(tmp_path, "latest")
