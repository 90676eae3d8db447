"""``imf trial --final-eval N``: the final checkpoint (best.pt, or latest.pt by eval.final_checkpoint) re-scored
on selection seeds into final_eval.json."""
from __future__ import annotations

import json

import pytest

from imf.config import load_resolved
from imf.stats import standard_error
from imf_process import run_imf

TINY = ["training.max_train_steps=4", "training.batch_size=16", "eval.n_test=2", "eval.n_train=1",
        "eval.max_steps=24", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false",
        "training.num_epochs=1"]


@pytest.mark.slow
def test_a_tiny_trial_writes_a_final_eval_on_selection_seeds(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_imf("trial", "smoke", *TINY, f"data.cache_dir={tmp_path / 'cache'}", "--out",
                str(run_dir), "--store", "none", "--final-eval", "5")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((run_dir / "final_eval.json").read_text())
    assert set(result) == {"checkpoint", "seeds", "episodes", "seed_start", "mean", "se", "per_seed",
                           "success_rate", "success_se", "per_seed_success"}
    assert result["seeds"] == "selection"
    assert result["success_rate"] == pytest.approx(sum(result["per_seed_success"]) / 5)
    assert result["success_se"] == pytest.approx(standard_error(result["per_seed_success"]))
    assert all(s in (0.0, 1.0) for s in result["per_seed_success"])
    assert result["checkpoint"] == "checkpoints/best.pt" and (run_dir / result["checkpoint"]).is_file()
    assert result["episodes"] == 5 and len(result["per_seed"]) == 5
    assert all(0.0 <= s <= 1.0 for s in result["per_seed"])
    assert result["mean"] == pytest.approx(sum(result["per_seed"]) / 5)
    assert result["se"] == pytest.approx(standard_error(result["per_seed"]))
    ev = load_resolved(run_dir / "config.yaml").eval
    selection = set(range(result["seed_start"], result["seed_start"] + 5))
    rows = [json.loads(line) for line in (run_dir / "logs.json.txt").read_text().splitlines()]
    logged = {int(s) for r in rows for s in r.get("test_per_seed", {})}
    assert logged == set(range(ev.test_start_seed, ev.test_start_seed + ev.n_test))
    assert not selection & logged
    assert not selection & set(range(ev.train_start_seed, ev.train_start_seed + ev.n_train))
    assert [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")] == []
    assert "final eval: mean" in proc.stdout and "success rate" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--final-eval", "0"], "--final-eval 0: the number of selection episodes must be an integer from 1"),
    (["--final-eval", "10", "eval.test_start_seed=500003"], "overlap the test rollout seeds"),
])
def test_a_bad_final_eval_fails_before_training(tmp_path, args, words):
    proc = run_imf("trial", "smoke", "--out", str(tmp_path / "run"), "--store", "none", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: ") and words in lines[0], lines
    assert not (tmp_path / "run").exists()


def test_a_run_without_a_best_checkpoint_is_skipped_and_says_so(tmp_path):
    from imf.config import load_config
    from imf.train.evaluate import run_final_eval
    (tmp_path / "summary.json").write_text(json.dumps({"id": "t", "checkpoints": {"best": None}}))
    said: list[str] = []
    assert run_final_eval(tmp_path, 5, load_config("smoke").eval, echo=said.append) is None
    assert "no best checkpoint" in said[0] and not (tmp_path / "final_eval.json").exists()


@pytest.mark.slow
def test_a_trial_set_to_score_latest_scores_latest_on_selection_and_holdout(tmp_path):
    """eval.final_checkpoint=latest: --final-eval and --holdout score the weights at the end of
    training, not the checkpoint the test rollouts chose; best.pt is still kept."""
    run_dir = tmp_path / "run"
    proc = run_imf("trial", "smoke", *TINY, "training.num_epochs=2", "eval.final_checkpoint=latest",
                   f"data.cache_dir={tmp_path / 'cache'}", "--out", str(run_dir), "--store", "none",
                   "--final-eval", "3", "--holdout")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((run_dir / "final_eval.json").read_text())
    assert result["checkpoint"] == "checkpoints/latest.pt" and (run_dir / "checkpoints" / "best.pt").is_file()
    looks = json.loads((run_dir / "holdout.json").read_text())["looks"]
    assert [look["checkpoint"] for look in looks] == ["checkpoints/latest.pt"]


def test_the_final_checkpoint_is_best_or_latest(tmp_path):
    from imf.config import load_config
    from imf.train.evaluate import final_checkpoint_of
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "summary.json").write_text(json.dumps(
        {"id": "t", "checkpoints": {"best": "checkpoints/best.pt", "latest": "checkpoints/latest.pt"}}))
    ev = load_config("smoke").eval
    assert final_checkpoint_of(tmp_path, ev) is None  # neither file is there
    for name in ("best.pt", "latest.pt"):
        (tmp_path / "checkpoints" / name).write_bytes(b"")
    assert final_checkpoint_of(tmp_path, ev) == "checkpoints/best.pt"
    from dataclasses import replace
    assert final_checkpoint_of(tmp_path, replace(ev, final_checkpoint="latest")) == "checkpoints/latest.pt"


@pytest.mark.parametrize("value", ["last", "epoch=3", ""])
def test_a_bad_final_checkpoint_names_the_key_and_the_words_allowed(value):
    from imf.config import load_config
    from imf.errors import ConfigError
    with pytest.raises(ConfigError, match=r"'eval.final_checkpoint': got .*allowed: best, latest"):
        load_config("smoke", [f"eval.final_checkpoint={value}"])
