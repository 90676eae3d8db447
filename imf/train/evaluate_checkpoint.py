"""``imf eval``: rebuild a policy from a checkpoint and score it on the test seeds."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from imf.config import Config, from_dict
from imf.data.normalizer import MinMaxNormalizer
from imf.errors import CheckpointError, ConfigError
from imf.policy import ImfPolicy
from imf.train import checkpoint as ckpt_io
from imf.train.checkpoint import load_checkpoint
from imf.train.evaluate import score, test_seeds
from imf.train.parts import pick_device

MAX_SEED = 2**32 - 1  # the simulator's reset seeds are 32-bit


def policy_from_checkpoint(state: dict[str, Any], device: torch.device) -> tuple[ImfPolicy, Config]:
    """The EMA policy (or the raw one when EMA was off) with its own normaliser."""
    cfg = from_dict(state["config"])
    policy = ImfPolicy(cfg, MinMaxNormalizer.from_state_dict(state["normalizer"]))
    weights = ckpt_io.weights_with_normalizer(state.get("ema") or state["policy"], state)
    try:
        policy.load_state_dict(weights)
    except RuntimeError as exc:
        raise CheckpointError(f"checkpoint weights do not fit the model of its own config: "
                              f"{str(exc).splitlines()[0]}") from None
    return policy.to(device).eval(), cfg


def best_checkpoint(folder: Path) -> Path:
    """The checkpoint the scoreboard in ``folder`` names as best, resolved under ``folder``."""
    from imf.store.scoreboard import ScoreboardStore

    return ScoreboardStore(folder).best_checkpoint()


def check_options(n_test: int | None, start_seed: int | None, n_workers: int | None) -> None:
    """``imf eval``'s numbers, checked before a checkpoint loads; ConfigError names the flag."""
    if n_test is not None and n_test < 1:
        raise ConfigError(f"--n-test {n_test}: the number of test episodes must be at least 1")
    if start_seed is not None and not 0 <= start_seed <= MAX_SEED - (n_test or 1) + 1:
        raise ConfigError(f"--start-seed {start_seed}: test seeds must lie in 0..{MAX_SEED} "
                          f"(the simulator's seed range), --n-test of them from --start-seed")
    if n_workers is not None and n_workers < 0:
        raise ConfigError(f"--workers {n_workers}: give 0 (automatic) or more simulator processes")


def evaluate_checkpoint(path: Path, n_test: int | None = None, start_seed: int | None = None,
                        device: str = "auto", n_workers: int | None = None,
                        noise_seed: int | None = None) -> dict[str, Any]:
    check_options(n_test, start_seed, n_workers)
    dev = pick_device(device, source="--device")
    state = load_checkpoint(path)
    policy, cfg = policy_from_checkpoint(state, dev)
    ev = cfg.eval
    ev = replace(ev, n_test=n_test if n_test is not None else ev.n_test,
                 test_start_seed=start_seed if start_seed is not None else ev.test_start_seed,
                 n_workers=n_workers if n_workers is not None else ev.n_workers)
    cfg = replace(cfg, eval=ev)
    seeds = test_seeds(ev)
    # By default the training-time rollout's generator seed, so the same seeds give the same
    # score; another noise_seed re-scores with other sampling noise (its spread is the noise).
    noise = cfg.training.seed if noise_seed is None else noise_seed
    result = score(policy, cfg, dev, seeds, seed=noise)
    return {"checkpoint": str(path), "epoch": state.get("epoch"), "trial": state.get("trial_id"),
            "test_mean_score": result.mean_score, "test_success_rate": result.success_rate,
            "n_test": len(seeds), "start_seed": ev.test_start_seed, "noise_seed": noise,
            "per_seed": {str(s): v for s, v in sorted(result.per_seed.items())},
            "per_seed_success": {str(s): v for s, v in sorted(result.per_seed_success.items())},
            "logged_test_mean_score": (state.get("scores") or {}).get("test_mean_score")}
