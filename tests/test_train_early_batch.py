"""training.early_batch_size: a smaller batch for the first early_batch_samples samples, then the
trial's own; the log counts the samples each step trained, and every reader of a run counts them."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from imf.config import load_config
from imf.errors import ConfigError
from imf.store import samples_trained
from imf.train.parts import EarlyBatches, _planned_steps
from imf.train.trial import TrialOptions, run_trial
from imf_process import run_in_process

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "learning"))
from run_record import read_record  # noqa: E402

TINY = ["training.max_train_steps=4", "training.batch_size=16", "eval.n_test=2", "eval.n_train=0",
        "eval.max_steps=24", "eval.n_workers=1", "data.demo_episodes=4", "logging.trackers=[]"]


@pytest.mark.parametrize("overrides, needle", [
    (["training.early_batch_size=8"],
     "config key 'training.early_batch_samples': training.early_batch_size=8 needs it too"),
    (["training.early_batch_samples=1000"],
     "config key 'training.early_batch_size': training.early_batch_samples=1000 needs it too"),
    (["training.early_batch_size=6", "training.early_batch_samples=100", "training.grad_accum=4"],
     "config key 'training.grad_accum': 4 must divide training.early_batch_size=6"),
    (["training.early_batch_size=-8", "training.early_batch_samples=100"], "training.early_batch_size"),
    (["training.early_batch_size=32", "training.early_batch_samples=100"],
     "config key 'training.early_batch_size': 32 must be below training.batch_size=32"),
    (["training.early_batch_size=8", "training.early_batch_samples=nan"], "training.early_batch_samples"),
])
def test_an_early_batch_set_by_halves_or_badly_is_refused_by_its_key(overrides, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.").replace("(", r"\(")):
        load_config("smoke", overrides)


def test_the_cli_refuses_a_half_set_early_batch_in_one_line_before_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_in_process(monkeypatch, capsys, "trial", "smoke", "training.early_batch_size=8",
                                  "--out", str(tmp_path / "run"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "training.early_batch_samples" in lines[0], err
    assert not (tmp_path / "run").exists()


def test_the_learning_rate_plan_counts_the_early_epochs_at_their_own_steps():
    cfg = load_config("smoke", ["training.num_epochs=10", "training.early_batch_size=8",
                                "training.early_batch_samples=100"]).training
    # 4 steps of 8 = 32 samples an early epoch: 4 epochs reach 100, then 6 epochs of 4 steps.
    assert _planned_steps(cfg, 4, EarlyBatches(None, 4, 100), windows=1000) == 4 * 4 + 6 * 4
    # Without max_train_steps an early epoch is the whole set at the small batch: twice the steps.
    assert _planned_steps(cfg, 5, EarlyBatches(None, 10, 100), windows=80) == 2 * 10 + 8 * 5
    assert _planned_steps(cfg, 4, None, windows=1000) == 40


def test_samples_trained_reads_a_rows_own_count_before_steps_times_batch():
    assert samples_trained({"global_step": 10, "samples": 96}, 16) == 96
    assert samples_trained({"global_step": 10}, 16) == 160  # a run logged before the count
    assert samples_trained({"global_step": 10}, None) is None


@pytest.mark.slow
def test_a_trial_trains_the_early_batch_until_its_samples_then_its_own(demo_cache, tmp_path):
    torch.set_num_threads(1)
    cfg = load_config("smoke", TINY + [f"data.cache_dir={demo_cache}", "training.num_epochs=4",
                                       "training.early_batch_size=8", "training.early_batch_samples=40"])
    run_dir = tmp_path / "runs" / "early"
    summary = run_trial(cfg, TrialOptions(trial_id="early", run_dir=run_dir))
    assert summary["status"] == "completed"
    rows = [json.loads(line) for line in (run_dir / "logs.json.txt").read_text().splitlines()]
    # 4 steps an epoch: 32 samples at batch 8, 64 (still under 40 at its start), then batches of 16.
    assert [(r["global_step"], r["samples"]) for r in rows] == [(4, 32), (8, 64), (12, 128), (16, 192)]
    assert rows[-1]["lr"] == pytest.approx(0.0, abs=1e-12)  # the cosine ends at the planned last step
    record = read_record(run_dir)
    assert record["samples"] == 192 and [point[1] for point in record["curve"]] == [32, 64, 128, 192]


def test_a_checkpoint_from_before_the_sample_count_resumes_at_steps_times_its_batch():
    from imf.train.checkpoint import rng_state
    from imf.train.state import TrainState
    old = {"epoch": 3, "global_step": 40, "rng": rng_state(),
           "scores": {"best": [0.5, 2], "best_success_rate": 0.1, "last": 0.4}}
    state = TrainState()
    state.load_state_dict(old, elapsed_s=12.0, batch_size=16)
    assert (state.epoch, state.global_step, state.samples) == (4, 40, 640)
    state.load_state_dict({**old, "samples": 500}, elapsed_s=12.0, batch_size=16)
    assert state.samples == 500
