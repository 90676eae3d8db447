"""Rollouts of a policy in the simulator, through the scorer's small policy interface.

Also ``imf eval`` (a policy rebuilt from a checkpoint, scored on the test seeds), ``imf trial
--final-eval N`` (best.pt, or latest.pt with eval.final_checkpoint=latest, re-scored on N selection seeds that no rollout used, written to
final_eval.json: checkpoint, seeds, episodes, seed_start, mean, se, success_rate, success_se,
per_seed, per_seed_success) and ``imf eval --holdout`` (one look at the holdout seeds,
appended to holdout.json). The seed ranges: imf/config/eval_seeds.py.
"""
from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from imf.atomic import atomic_write_json
from imf.config import Config, EvalConfig, final_eval_seeds, from_dict, holdout_seeds
from imf.seeds import SELECTION
from imf.data import MinMaxNormalizer
from imf.errors import CheckpointError, ConfigError
from imf.policy import ActionEnsemble, ImfPolicy
from imf.pusht import ScoreResult, score_policy
from imf.stats import pm, standard_error
from imf.clock import now_iso
from imf.store import CHECKPOINTS, FINAL_EVAL, HOLDOUT, LATEST, append_look, read_looks, read_summary, run_dir_of
from imf.train import checkpoint as ckpt_io
from imf.train.checkpoint import load_checkpoint
from imf.train.parts import pick_device


class TorchPolicyAdapter:
    """numpy observations in, numpy world-unit actions out; noise from one seeded generator."""

    def __init__(self, policy: Any, device: torch.device, seed: int, n_steps: int | None = None) -> None:
        self.policy = policy
        self.device = device
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.n_steps = n_steps  # sampling steps; None: the objective's own setting

    @torch.no_grad()
    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        batch = {k: torch.from_numpy(np.ascontiguousarray(v)).to(self.device) for k, v in obs.items()}
        action = self.policy.predict_action(batch, generator=self.generator, n_steps=self.n_steps)  # (B, n_action_steps, 2)
        return action.float().cpu().numpy()


def n_workers(eval_cfg: EvalConfig) -> int:
    if eval_cfg.n_workers > 0:
        return eval_cfg.n_workers
    return max(1, min(8, os.cpu_count() or 1))


def score(policy: Any, cfg: Config, device: torch.device, seeds: list[int], seed: int,
          n_steps: int | None = None) -> ScoreResult:
    was_training = policy.training
    policy.eval()
    try:
        return score_policy(TorchPolicyAdapter(policy, device, seed, n_steps), seeds,
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


MAX_SEED = 2**32 - 1  # the simulator's reset seeds are 32-bit


def policy_from_checkpoint(state: dict[str, Any], device: torch.device
                           ) -> tuple[ImfPolicy | ActionEnsemble, Config]:
    """The EMA policy (or the raw one when EMA was off) with its own normaliser; for an
    ensemble checkpoint, its members so rebuilt, their chunks averaged, and the first
    member's config (its eval settings and noise seed score the ensemble)."""
    if state.get("kind") == ckpt_io.ENSEMBLE:
        members = [policy_from_checkpoint(member, device)[0] for member in state["members"]]
        return ActionEnsemble(members).to(device).eval(), from_dict(state["config"])
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
    from imf.store import ScoreboardStore

    return ScoreboardStore(folder).best_checkpoint()


def check_options(n_test: int | None, start_seed: int | None, n_workers: int | None,
                  action_steps: int | None = None, sample_steps: int | None = None,
                  noise_scale: float | None = None) -> None:
    """``imf eval``'s numbers, checked before a checkpoint loads; ConfigError names the flag."""
    if n_test is not None and n_test < 1:
        raise ConfigError(f"--n-test {n_test}: the number of test episodes must be at least 1")
    if start_seed is not None and not 0 <= start_seed <= MAX_SEED - (n_test or 1) + 1:
        raise ConfigError(f"--start-seed {start_seed}: test seeds must lie in 0..{MAX_SEED} "
                          f"(the simulator's seed range), --n-test of them from --start-seed")
    if n_workers is not None and n_workers < 0:
        raise ConfigError(f"--workers {n_workers}: give 0 (automatic) or more simulator processes")
    if action_steps is not None and action_steps < 1:
        raise ConfigError(f"--action-steps {action_steps}: execute at least 1 action of each plan")
    if sample_steps is not None and sample_steps < 1:
        raise ConfigError(f"--sample-steps {sample_steps}: sample each plan in at least 1 step")
    if noise_scale is not None and not (noise_scale > 0 and math.isfinite(noise_scale)):
        raise ConfigError(f"--noise-scale {noise_scale}: the starting noise's standard deviation must be a "
                          f"positive number (1: the noise the objective trained from)")


def starting_noise(state: dict[str, Any], noise_scale: float | None) -> dict[str, Any]:
    """``state`` whose config (and each ensemble member's) samples from ``noise_scale`` times unit noise
    (objective.noise_scale); the same weights. The checkpoint on disk is not touched."""
    if noise_scale is None:
        return state
    config = {**state["config"], "objective": {**state["config"].get("objective", {}), "noise_scale": noise_scale}}
    members = [starting_noise(m, noise_scale) for m in state.get("members", [])]
    return {**state, "config": config, **({"members": members} if members else {})}


def executing(cfg: Config, action_steps: int | None) -> Config:
    """``cfg`` with the first ``action_steps`` of each predicted chunk executed before the policy
    plans again (receding horizon): at most the actions the model predicts from the current step
    on (horizon - n_obs_steps + 1), all of them trained, whatever n_action_steps it ran with."""
    if action_steps is None:
        return cfg
    p = cfg.policy
    ahead = p.horizon - p.n_obs_steps + 1
    if not 1 <= action_steps <= ahead:
        raise ConfigError(f"--action-steps {action_steps}: this checkpoint predicts {ahead} actions from "
                          f"the current step (horizon {p.horizon} - n_obs_steps {p.n_obs_steps} + 1); "
                          f"execute 1..{ahead} of them")
    return replace(cfg, policy=replace(p, n_action_steps=action_steps))


def _returning(policy: ImfPolicy | ActionEnsemble, n_action_steps: int) -> None:
    """Make ``policy`` (and an ensemble's members) return chunks of ``n_action_steps``."""
    for part in [policy, *getattr(policy, "members", [])]:
        part.n_action_steps = n_action_steps


def evaluate_checkpoint(path: Path, n_test: int | None = None, start_seed: int | None = None,
                        device: str = "auto", n_workers: int | None = None,
                        noise_seed: int | None = None, action_steps: int | None = None,
                        sample_steps: int | None = None, noise_scale: float | None = None) -> dict[str, Any]:
    """``sample_steps``: sampling steps a plan instead of the objective's own; ``noise_scale``: the
    starting noise's standard deviation instead of objective.noise_scale (the same weights)."""
    check_options(n_test, start_seed, n_workers, action_steps, sample_steps, noise_scale)
    dev = pick_device(device, source="--device")
    state = starting_noise(load_checkpoint(path), noise_scale)
    policy, cfg = policy_from_checkpoint(state, dev)
    ev = cfg.eval
    ev = replace(ev, n_test=n_test if n_test is not None else ev.n_test,
                 test_start_seed=start_seed if start_seed is not None else ev.test_start_seed,
                 n_workers=n_workers if n_workers is not None else ev.n_workers)
    cfg = replace(executing(cfg, action_steps), eval=ev)
    _returning(policy, cfg.policy.n_action_steps)
    seeds = test_seeds(ev)
    # By default the training-time rollout's generator seed, so the same seeds give the same
    # score; another noise_seed re-scores with other sampling noise (its spread is the noise).
    noise = cfg.training.seed if noise_seed is None else noise_seed
    result = score(policy, cfg, dev, seeds, seed=noise, n_steps=sample_steps)
    return {"checkpoint": str(path), "epoch": state.get("epoch"), "trial": state.get("trial_id"),
            "test_mean_score": result.mean_score, "test_success_rate": result.success_rate,
            "n_test": len(seeds), "start_seed": ev.test_start_seed, "noise_seed": noise,
            "action_steps": cfg.policy.n_action_steps, "sample_steps": sample_steps,
            "noise_scale": cfg.objective.noise_scale,
            "per_seed": {str(s): v for s, v in sorted(result.per_seed.items())},
            "per_seed_success": {str(s): v for s, v in sorted(result.per_seed_success.items())},
            "logged_test_mean_score": (state.get("scores") or {}).get("test_mean_score")}


def best_checkpoint_of(run_dir: Path) -> str | None:
    """The best checkpoint named by the run's summary.json (relative to the run), if it exists."""
    summary = read_summary(run_dir)
    best = summary.checkpoints.best if summary else None
    return best if best and (run_dir / best).is_file() else None


def score_on_seeds(path: Path, seeds: list[int], device: str = "auto") -> dict[str, Any]:
    """``path`` scored on ``seeds`` (a range of consecutive seeds): mean and success ± SE."""
    result = evaluate_checkpoint(path, n_test=len(seeds), start_seed=seeds[0], device=device)
    per_seed = [float(result["per_seed"][str(s)]) for s in seeds]
    success = [float(result["per_seed_success"][str(s)]) for s in seeds]
    return {"epoch": result["epoch"], "trial": result["trial"], "episodes": len(seeds),
            "seed_start": seeds[0], "mean": float(result["test_mean_score"]),
            "se": standard_error(per_seed), "success_rate": float(result["test_success_rate"]),
            "success_se": standard_error(success), "per_seed": per_seed, "per_seed_success": success}


def _scored_text(payload: dict[str, Any]) -> str:
    return (f"mean {pm(payload['mean'], payload['se'], mark='+-')} (SE), success rate "
            f"{pm(payload['success_rate'], payload['success_se'], 3, mark='+-')} over {payload['episodes']} episodes")


def final_checkpoint_of(run_dir: Path, eval_cfg: EvalConfig) -> str | None:
    """The checkpoint the run's final evaluation scores (``eval.final_checkpoint``), relative to the
    run, if it exists: best (named by summary.json) or latest."""
    if eval_cfg.final_checkpoint == "best":
        return best_checkpoint_of(run_dir)
    summary = read_summary(run_dir)
    latest = (summary.checkpoints.latest if summary else None) or f"{CHECKPOINTS}/{LATEST}"
    return latest if (run_dir / latest).is_file() else None


def run_final_eval(run_dir: Path, n: int, eval_cfg: EvalConfig, device: str = "auto",
                   echo: Callable[[str], None] = print) -> dict[str, Any] | None:
    """Score the run's final checkpoint (``eval.final_checkpoint``: best or latest) on ``n``
    selection seeds and write final_eval.json.

    Returns what was written, or None (and says so) when the run has no such checkpoint.
    """
    run_dir = Path(run_dir)
    seeds = final_eval_seeds(n, eval_cfg)
    chosen = final_checkpoint_of(run_dir, eval_cfg)
    if chosen is None:
        echo(f"final eval skipped: {run_dir} has no {eval_cfg.final_checkpoint} checkpoint"
             + (" (no rollout was scored)" if eval_cfg.final_checkpoint == "best" else ""))
        return None
    echo(f"final eval: {chosen} on {n} selection episodes, seeds {seeds[0]}..{seeds[-1]}")
    scored = score_on_seeds(run_dir / chosen, seeds, device)
    payload = {"checkpoint": Path(chosen).as_posix(), "seeds": SELECTION.name,
               **{k: v for k, v in scored.items() if k not in ("epoch", "trial")}}
    atomic_write_json(run_dir / FINAL_EVAL, payload)
    echo(f"final eval: {_scored_text(payload)}; wrote {run_dir / FINAL_EVAL}")
    return payload


def holdout_look(checkpoint: Path, n: int, device: str = "auto",
                 echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Score ``checkpoint`` on ``n`` holdout seeds and append the look to its run's holdout.json.

    The seeds are checked against the checkpoint's own eval settings before anything runs."""
    checkpoint = Path(checkpoint)
    run_dir = run_dir_of(checkpoint)
    try:
        previous = len(read_looks(run_dir).looks)  # an unreadable record fails before scoring
    except ValueError as exc:
        raise CheckpointError(f"--holdout: {exc}; move it aside to start a new record") from None
    state = load_checkpoint(checkpoint)
    seeds = holdout_seeds(n, from_dict(state["config"]).eval, flag="--holdout --n-test")
    echo(f"holdout: {checkpoint} on {n} holdout episodes, seeds {seeds[0]}..{seeds[-1]} "
         f"(look {previous + 1} at this run's holdout)")
    scored = score_on_seeds(checkpoint, seeds, device)
    shown = checkpoint.resolve()
    shown = shown.relative_to(run_dir.resolve()) if shown.is_relative_to(run_dir.resolve()) else shown
    look = {"time": now_iso(), "checkpoint": Path(shown).as_posix(), **scored}
    count = append_look(run_dir, look)
    echo(f"holdout: {_scored_text(look)}; look {count} recorded in {run_dir / HOLDOUT}")
    return look
