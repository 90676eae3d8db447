"""policy.action_frame: actions as offsets from the agent's last observed position (agent) or as the
simulator takes them (world); the normaliser is fitted on what the model predicts."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from imf.config import load_config
from imf.data import MinMaxNormalizer
from imf.data.keypoint_dataset import PushTKeypointDataset
from imf.errors import CheckpointError, ConfigError
from imf.model import attention_masks
from imf.policy import ImfPolicy
from imf.train.trial import TrialOptions, run_trial

torch.set_num_threads(1)

TINY = ["policy.obs_type=keypoints", "training.max_train_steps=6", "training.batch_size=32",
        "eval.n_test=2", "eval.n_train=0", "eval.max_steps=24", "eval.n_workers=1",
        "data.demo_episodes=4", "logging.swanlab=false", "training.val_probe_windows=64"]


def _dataset(cache: str) -> PushTKeypointDataset:
    from imf.pusht.expert import ensure_demo_dataset
    return PushTKeypointDataset(ensure_demo_dataset(4, seed=0, cache_dir=cache), horizon=10, n_obs_steps=2,
                                n_action_steps=8, val_ratio=0.25, max_train_episodes=None)


def test_the_agent_frame_normaliser_spans_every_training_windows_offsets(demo_cache):
    data = _dataset(demo_cache)
    offsets = data.action_offsets()
    assert offsets.shape == (len(data) * 10, 2)
    item = data[len(data) // 2]  # one window, read as training reads it
    want = item["action"].numpy() - item["obs"]["agent_pos"][1].numpy()  # its last observed frame is the origin
    got = offsets.reshape(len(data), 10, 2)[len(data) // 2]
    np.testing.assert_allclose(got, want, atol=1e-4)
    world, agent = data.get_normalizer("world"), data.get_normalizer("agent")
    scaled = agent.normalize("action", torch.from_numpy(offsets))
    assert scaled.min() == pytest.approx(-1.0, abs=1e-5) and scaled.max() == pytest.approx(1.0, abs=1e-5)
    # offsets over a window span less than the workspace: the same model error is fewer world units
    span = lambda norm: (norm.unnormalize("action", torch.ones(2)) - norm.unnormalize("action", -torch.ones(2)))  # noqa: E731
    assert (span(agent) < span(world)).all()
    torch.testing.assert_close(agent.normalize("keypoints", torch.zeros(20)), world.normalize("keypoints", torch.zeros(20)))


def _policy(frame: str) -> ImfPolicy:
    cfg = load_config("smoke", ["policy.obs_type=keypoints", f"policy.action_frame={frame}"])
    norm = MinMaxNormalizer()
    for key, dim in (("action", 2), ("agent_pos", 2), ("keypoints", 20)):
        norm.set_identity_range(key, -100.0, 100.0, dim)
    return ImfPolicy(cfg, norm, masks=attention_masks(cfg.policy))


@pytest.mark.parametrize("frame, moves", [("agent", True), ("world", False)])
def test_predicted_actions_are_placed_at_the_agent_only_in_the_agent_frame(frame, moves):
    policy = _policy(frame)
    fixed = torch.full((1, policy.horizon, 2), 0.25)  # the model's normalised output, whatever it sees
    policy.objective.sample = lambda model, cond, n_steps=None, generator=None: fixed.clone()
    kp = torch.zeros(1, policy.n_obs_steps, 20)
    kp[..., 18:] = torch.tensor([10.0, -20.0])
    obs = {"keypoints": kp, "agent_pos": kp[..., 18:].clone()}
    action = policy.predict_action(obs)  # (1, n_action_steps, 2)
    base = policy.normalizer.unnormalize("action", fixed)[:, : policy.n_action_steps]
    want = base + torch.tensor([10.0, -20.0]) if moves else base
    torch.testing.assert_close(action, want)


def test_the_loss_sees_the_actions_less_the_last_observed_position():
    policy = _policy("agent")
    seen = {}
    policy.objective.loss = lambda model, actions, cond, generator=None: seen.setdefault("a", actions)
    pos = torch.tensor([[[1.0, 2.0], [30.0, 40.0], [5.0, 5.0]]]).expand(1, 3, 2)  # frame 1 is the last observed
    pos = torch.cat([pos, pos[:, -1:].expand(1, policy.horizon - 3, 2)], 1)
    kp = torch.zeros(1, policy.horizon, 20)
    kp[..., 18:] = pos
    actions = torch.full((1, policy.horizon, 2), 50.0)
    policy.compute_loss({"obs": {"keypoints": kp, "agent_pos": pos}, "action": actions})
    torch.testing.assert_close(seen["a"], policy.normalizer.normalize("action", actions - pos[:, 1:2]))


def test_a_bad_frame_is_one_line_naming_the_key():
    with pytest.raises(ConfigError) as bad:
        load_config("smoke", ["policy.action_frame=body"])
    assert str(bad.value) == "config key 'policy.action_frame': got 'body', allowed: world, agent"


@pytest.mark.slow
def test_an_agent_frame_trial_learns_and_its_checkpoint_scores_the_same(demo_cache, tmp_path):
    cfg = load_config("smoke", TINY + [f"data.cache_dir={demo_cache}", "training.num_epochs=6",
                                       "training.rollout_every=6", "training.lr=1e-3", "data.val_ratio=0.25",
                                       "policy.action_frame=agent"])
    run_dir = tmp_path / "agent"
    summary = run_trial(cfg, TrialOptions(trial_id="agent", run_dir=run_dir, stores=["none"]))
    assert summary["status"] == "completed"
    rows = [json.loads(line) for line in (run_dir / "logs.json.txt").read_text().splitlines()]
    assert rows[-1]["val_mse"] < rows[0]["val_mse"]
    assert rows[-1]["val_action_rmse"] < rows[0]["val_action_rmse"]  # world units: the origin is added back
    env = {"PATH": str(Path(sys.executable).parent), "SWANLAB_MODE": "offline", "OMP_NUM_THREADS": "1"}
    ev = subprocess.run([sys.executable, "-m", "imf", "eval", str(run_dir / "checkpoints" / "best.pt"), "--json"],
                        capture_output=True, text=True, env=env)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["test_mean_score"] == pytest.approx(rows[-1]["test_mean_score"])


def test_a_warm_start_across_frames_is_refused_in_one_line():
    from imf.train.checkpoint import check_compatible
    cfg = load_config("smoke", ["policy.obs_type=keypoints", "policy.action_frame=agent"])
    ckpt = {"config": {"policy": {"obs_type": "keypoints", "action_dim": 2, "n_obs_steps": 2}},
            "normalizer": {}}  # a world-frame checkpoint: written before the key, or with it
    for old in ({}, {"action_frame": "world"}):
        ckpt["config"]["policy"].update(old)
        with pytest.raises(CheckpointError) as bad:
            check_compatible(ckpt, cfg.policy, Path("w.pt"))
        assert str(bad.value) == ("checkpoint w.pt was trained with policy.action_frame=world, this run has agent; "
                                  "warm start needs the same action space")
    ckpt["config"]["policy"]["action_frame"] = "agent"
    check_compatible(ckpt, cfg.policy, Path("w.pt"))
