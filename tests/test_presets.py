"""The shipped presets load, and a short run of each CPU preset logs finite scores."""
from __future__ import annotations

import json
import math

import pytest

from imf.config import list_presets, load_config
from imf.sweep.launch import SweepRequest, plan_sweep


@pytest.mark.parametrize("name", list_presets())
def test_every_preset_loads(name):
    assert load_config(name).name == name


def test_the_demo_preset_is_the_readme_sweep_on_two_cpu_slots(tmp_path):
    _, state, plan = plan_sweep(SweepRequest(config="demo", out=tmp_path))
    assert state.name == "demo" and len(state.trials) == 2
    assert [q.spec for q in state.queues] == ["local:cpu", "local:cpu"]
    cfg = load_config("demo")
    assert cfg.policy.obs_type == "keypoints" and cfg.training.time_budget_s == 420
    assert cfg.eval.n_test == 50  # scored on the 50 test seeds: holding still scores 0.076 there


@pytest.mark.slow  # trains
@pytest.mark.parametrize("preset", ["demo", "pusht_lowdim_cpu"])
def test_a_short_run_of_a_cpu_preset_logs_finite_scores(preset, tmp_path):
    from imf.pusht.expert import ensure_demo_dataset
    from imf.train.trial import TrialOptions, run_trial
    ensure_demo_dataset(6, seed=0, cache_dir=str(tmp_path / "cache"))
    cfg = load_config(preset, ["training.time_budget_s=4", "training.max_train_steps=5", "eval.n_test=2",
                               "eval.n_workers=1", "eval.max_steps=20", "data.demo_episodes=6",
                               f"data.cache_dir={tmp_path / 'cache'}", "logging.swanlab=false",
                               "logging.stores=none", "training.max_val_steps=2", "training.val_probe_windows=16"])
    summary = run_trial(cfg, TrialOptions(trial_id=preset, run_dir=tmp_path / preset))
    assert summary["status"] == "completed"
    rows = [json.loads(line) for line in (tmp_path / preset / "logs.json.txt").read_text().splitlines()]
    scored = [r for r in rows if "test_mean_score" in r]
    assert scored and all(math.isfinite(r["test_mean_score"]) and 0 <= r["test_success_rate"] <= 1
                          for r in scored)
    assert all(math.isfinite(r["train_loss"]) for r in rows)
