"""Rollouts of a policy in the simulator, through the scorer's small policy interface."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from imf.config import Config, EvalConfig
from imf.pusht.scorer import ScoreResult, score_policy


class TorchPolicyAdapter:
    """numpy observations in, numpy world-unit actions out; noise from one seeded generator."""

    def __init__(self, policy: Any, device: torch.device, seed: int) -> None:
        self.policy = policy
        self.device = device
        self.generator = torch.Generator(device=device).manual_seed(seed)

    @torch.no_grad()
    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        batch = {k: torch.from_numpy(np.ascontiguousarray(v)).to(self.device) for k, v in obs.items()}
        action = self.policy.predict_action(batch, generator=self.generator)  # (B, n_action_steps, 2)
        return action.float().cpu().numpy()


def n_workers(eval_cfg: EvalConfig) -> int:
    if eval_cfg.n_workers > 0:
        return eval_cfg.n_workers
    return max(1, min(8, os.cpu_count() or 1))


def score(policy: Any, cfg: Config, device: torch.device, seeds: list[int], seed: int) -> ScoreResult:
    was_training = policy.training
    policy.eval()
    try:
        return score_policy(TorchPolicyAdapter(policy, device, seed), seeds,
                            max_steps=cfg.eval.max_steps, n_obs_steps=cfg.policy.n_obs_steps,
                            n_action_steps=cfg.policy.n_action_steps, n_workers=n_workers(cfg.eval),
                            legacy=cfg.eval.legacy, obs_type=cfg.policy.obs_type)
    finally:
        policy.train(was_training)


def test_seeds(eval_cfg: EvalConfig) -> list[int]:
    return list(range(eval_cfg.test_start_seed, eval_cfg.test_start_seed + eval_cfg.n_test))


def train_seeds(eval_cfg: EvalConfig) -> list[int]:
    return list(range(eval_cfg.train_start_seed, eval_cfg.train_start_seed + eval_cfg.n_train))


def rollout_metrics(policy: Any, cfg: Config, device: torch.device) -> dict[str, Any]:
    """test_mean_score, test_success_rate, train_mean_score and per-seed test scores."""
    test = score(policy, cfg, device, test_seeds(cfg.eval), seed=cfg.training.seed)
    metrics: dict[str, Any] = {
        "test_mean_score": test.mean_score, "test_success_rate": test.success_rate,
        "test_per_seed": {str(s): v for s, v in sorted(test.per_seed.items())},
    }
    if cfg.eval.n_train > 0:
        train = score(policy, cfg, device, train_seeds(cfg.eval), seed=cfg.training.seed + 1)
        metrics["train_mean_score"] = train.mean_score
    return metrics
