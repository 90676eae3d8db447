"""Low-dimensional PushT (policy.obs_type=keypoints): observation, data, policy, trial, eval."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from imf.config import load_config
from imf.data.keypoint_dataset import PushTKeypointDataset
from imf.data.lowdim import KEYPOINT_OBS_DIM, keypoint_obs
from imf.data.replay_buffer import KEYPOINT_TASK_ARRAYS, ReplayBuffer
from imf.errors import ConfigError, DataError
from imf.pusht.env import PushTEnv
from imf.pusht.scorer import score_policy
from imf.train.trial import TrialOptions, run_trial

torch.set_num_threads(1)

TINY = ["policy.obs_type=keypoints", "training.max_train_steps=6", "training.batch_size=32",
        "eval.n_test=2", "eval.n_train=0", "eval.max_steps=24", "eval.n_workers=1",
        "data.demo_episodes=4", "logging.swanlab=false", "training.val_probe_windows=64"]


def _demo_path(cache: str) -> Path:
    from imf.pusht.expert import ensure_demo_dataset
    return ensure_demo_dataset(4, seed=0, cache_dir=cache)


def test_keypoint_obs_layout_and_bad_shapes():
    kp = np.arange(18, dtype=np.float32).reshape(9, 2)
    obs = keypoint_obs(kp, np.array([100.0, 200.0]))
    assert obs.shape == (KEYPOINT_OBS_DIM,) and obs.dtype == np.float32
    assert obs[:18].tolist() == list(range(18)) and obs[18:].tolist() == [100.0, 200.0]
    with pytest.raises(DataError, match="keypoints"):
        keypoint_obs(np.zeros((8, 2)), np.zeros(2))


def test_env_keypoints_equal_the_stored_arrays(demo_cache):
    """The environment's observation, rebuilt from each stored state, is the data set's."""
    buffer = ReplayBuffer.open(_demo_path(demo_cache), required=KEYPOINT_TASK_ARRAYS, only_required=True)
    assert "img" not in buffer.arrays  # a keypoint run leaves the images on disk
    data = PushTKeypointDataset(buffer, horizon=10, n_obs_steps=2, n_action_steps=8,
                                max_train_episodes=None)
    env = PushTEnv("keypoints")
    env.reset(seed=0)
    rows = np.linspace(0, buffer.n_steps - 1, 40).astype(int)
    for row in rows:
        env.set_state(buffer.arrays["state"][row].astype(np.float64))
        live = env._observation()
        assert live.shape == (20,)
        np.testing.assert_allclose(live, data.obs[row], atol=1e-2)  # stored angle is float32 mod 2 pi


def test_dataset_items_and_normaliser(demo_cache):
    data = PushTKeypointDataset(_demo_path(demo_cache), horizon=10, n_obs_steps=2, n_action_steps=8,
                                val_ratio=0.25, max_train_episodes=None)
    item = data[0]
    assert item["obs"]["keypoints"].shape == (10, 20) and item["action"].shape == (10, 2)
    torch.testing.assert_close(item["obs"]["agent_pos"], item["obs"]["keypoints"][:, 18:])
    norm = data.get_normalizer()
    train_rows = np.repeat(data.train_mask, data.buffer.episode_lengths)
    scaled = norm.normalize("keypoints", data.obs[train_rows])
    assert scaled.min() == pytest.approx(-1.0, abs=1e-5) and scaled.max() == pytest.approx(1.0, abs=1e-5)
    val = data.get_validation_dataset()
    assert len(val) > 0 and set(np.nonzero(~data.train_mask)[0]).isdisjoint(np.nonzero(data.train_mask)[0])


def test_scorer_keypoints_holding_still_scores_like_the_image_path():
    def hold(obs):  # keep the agent where it is
        return np.repeat(obs["agent_pos"][:, -1:, :], 8, axis=1)
    seeds = [100000, 100001, 100002]
    kp = score_policy(hold, seeds, max_steps=16, obs_type="keypoints")
    st = score_policy(hold, seeds, max_steps=16, obs_type="state")
    assert kp.per_seed == st.per_seed


def test_obs_type_is_checked():
    with pytest.raises(ConfigError, match="policy.obs_type.*allowed: image, keypoints"):
        load_config("smoke", ["policy.obs_type=pixels"])
    assert load_config("pusht_lowdim_imf").policy.horizon == 16
    cpu = load_config("pusht_lowdim_cpu")
    assert cpu.policy.obs_type == "keypoints" and cpu.training.lr_warmup_steps < 1000


@pytest.mark.slow
def test_short_keypoint_trial_learns_then_evals_and_refuses_image_warm_start(demo_cache, tmp_path):
    cfg = load_config("smoke", TINY + [f"data.cache_dir={demo_cache}", "training.num_epochs=6",
                                       "training.rollout_every=6", "training.lr=1e-3",
                                       "data.val_ratio=0.25"])
    run_dir = tmp_path / "kp"
    summary = run_trial(cfg, TrialOptions(trial_id="kp", run_dir=run_dir, stores=["none"]))
    assert summary["status"] == "completed"
    rows = [json.loads(line) for line in (run_dir / "logs.json.txt").read_text().splitlines()]
    assert rows[-1]["val_mse"] < rows[0]["val_mse"]
    assert "val_hold_still_rmse" in rows[0] and all("val_hold_still_rmse" not in r for r in rows[1:])
    assert {"val_action_rmse", "val_action_rmse_first"} <= rows[-1].keys()

    env = {"PATH": str(Path(sys.executable).parent), "SWANLAB_MODE": "offline", "OMP_NUM_THREADS": "1"}
    ev = subprocess.run([sys.executable, "-m", "imf", "eval", str(run_dir / "checkpoints" / "best.pt"),
                         "--json"], capture_output=True, text=True, env=env)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["test_mean_score"] == pytest.approx(rows[-1]["test_mean_score"])

    image_run = tmp_path / "img"
    img_cfg = load_config("smoke", [x for x in TINY if "obs_type" not in x]
                          + [f"data.cache_dir={demo_cache}", "training.num_epochs=1"])
    run_trial(img_cfg, TrialOptions(trial_id="img", run_dir=image_run, stores=["none"]))
    warm = subprocess.run([sys.executable, "-m", "imf", "trial", "smoke", *TINY,
                           f"data.cache_dir={demo_cache}", "--out", str(tmp_path / "warm"),
                           "--init-from", str(image_run / "checkpoints" / "latest.pt"), "--store", "none"],
                          capture_output=True, text=True, env=env)
    assert warm.returncode == 2
    err = warm.stderr.strip().splitlines()
    assert len(err) == 1 and "policy.obs_type=image" in err[0] and "keypoints" in err[0]
    assert not (tmp_path / "warm" / "checkpoints").exists()


@pytest.mark.slow
def test_time_budget_ends_training_with_a_rollout(demo_cache, tmp_path):
    cfg = load_config("smoke", TINY + [f"data.cache_dir={demo_cache}", "training.num_epochs=50",
                                       "training.rollout_every=50", "training.time_budget_s=0.5"])
    summary = run_trial(cfg, TrialOptions(trial_id="tb", run_dir=tmp_path / "tb", stores=["none"]))
    rows = [json.loads(line) for line in (tmp_path / "tb" / "logs.json.txt").read_text().splitlines()]
    assert summary["status"] == "completed" and len(rows) < 50
    assert "test_mean_score" in rows[-1] and rows[-1]["train_s"] >= 0.5


def test_cosine_schedule_follows_the_time_budget():
    from imf.train.budget import TrainClock, lr_factor
    clock = TrainClock("wall", budget_s=100.0)
    factor = lr_factor("cosine", 10, 10_000, clock)
    assert factor(0) == pytest.approx(0.1) and factor(10) == pytest.approx(1.0)
    clock.spent_s = 50.0  # half the budget: half-way down the cosine, whatever the step
    assert factor(20) == pytest.approx(0.5)
    clock.spent_s = 100.0
    assert factor(20) == pytest.approx(0.0) and clock.exhausted()
    with pytest.raises(ConfigError, match="budget_clock"):
        TrainClock("sundial")


def test_constant_schedule_holds_the_rate_after_the_warm_up():
    from imf.train.budget import TrainClock, lr_factor
    clock = TrainClock("wall", budget_s=100.0)
    factor = lr_factor("constant", 10, 10_000, clock)
    clock.spent_s = 90.0
    assert factor(0) == pytest.approx(0.1) and factor(20) == 1.0 and factor(9_999) == 1.0
