"""Score a checkpoint on the selection seeds final_eval uses, and time one action chunk.

The score goes through ``imf.train.evaluate.evaluate_checkpoint``, the path ``imf eval`` takes,
so what is recorded is what ``imf eval`` gives. The chunk latency is the wall time of one call
of the scorer's policy adapter on one environment's observation (batch 1, observation in,
action chunk out, device synchronised), the median of ``repeats`` calls after ``warmup``, on
this process's torch threads.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from imf.config import Config, final_eval_seeds, from_dict
from imf.data import agent_pos_of
from imf.pusht import PushTEnv
from imf.stats import pm, standard_error
from imf.train import TorchPolicyAdapter, evaluate_checkpoint, load_checkpoint, pick_device, policy_from_checkpoint

WARMUP, REPEATS = 5, 50


@dataclass
class Latency:
    median_ms: float
    p90_ms: float
    repeats: int
    threads: int
    device: str

    def text(self) -> str:
        return (f"{self.median_ms:.2f} ms median (p90 {self.p90_ms:.2f}) per chunk, batch 1, "
                f"{self.repeats} calls, {self.threads} torch thread(s) on {self.device}")


@dataclass
class SelectionScore:
    episodes: int
    seed_start: int
    mean: float
    se: float
    success_rate: float
    success_se: float
    per_seed: list[float]
    per_seed_success: list[float]
    noise_seed: int

    def text(self) -> str:
        return (f"mean {pm(self.mean, self.se, mark='+-')} (SE), success rate "
                f"{pm(self.success_rate, self.success_se, 3, mark='+-')} over {self.episodes} selection "
                f"episodes from seed {self.seed_start}")


def selection_seeds(state: dict[str, Any], n: int) -> list[int]:
    """final_eval's N selection seeds for the checkpoint's eval settings (a bad N is refused)."""
    return final_eval_seeds(n, from_dict(state["config"]).eval)


def score_selection(path: Path, n: int, device: str = "auto") -> SelectionScore:
    seeds = selection_seeds(load_checkpoint(path), n)
    result = evaluate_checkpoint(path, n_test=n, start_seed=seeds[0], device=device)
    per_seed = [float(result["per_seed"][str(s)]) for s in seeds]
    success = [float(result["per_seed_success"][str(s)]) for s in seeds]
    return SelectionScore(n, seeds[0], float(result["test_mean_score"]), standard_error(per_seed),
                      float(result["test_success_rate"]), standard_error(success), per_seed, success,
                      int(result["noise_seed"]))


def one_observation(cfg: Config, seed: int) -> dict[str, np.ndarray]:
    """A reset observation of ``seed``, repeated n_obs_steps times, batch 1 (the scorer's layout)."""
    obs_type, n_obs = cfg.policy.obs_type, cfg.policy.n_obs_steps
    obs, _ = PushTEnv(obs_type, legacy=cfg.eval.legacy).reset(seed=seed)
    if obs_type == "keypoints":
        frames = np.repeat(np.asarray(obs, np.float32)[None, None], n_obs, axis=1)
        return {"keypoints": frames, "agent_pos": np.ascontiguousarray(agent_pos_of(frames))}
    image = np.repeat(np.asarray(obs["image"], np.float32)[None, None], n_obs, axis=1)
    pos = np.repeat(np.asarray(obs["agent_pos"], np.float32)[None, None], n_obs, axis=1)
    return {"image": image, "agent_pos": pos}


def chunk_latency(path: Path, device: str = "auto", repeats: int = REPEATS) -> Latency:
    dev = pick_device(device, source="--device")
    policy, cfg = policy_from_checkpoint(load_checkpoint(path), dev)
    adapter = TorchPolicyAdapter(policy, dev, seed=cfg.training.seed)
    obs = one_observation(cfg, final_eval_seeds(1, cfg.eval)[0])
    times = []
    for index in range(WARMUP + repeats):
        start = time.perf_counter()
        adapter(obs)  # returns numpy: the device is synchronised
        if index >= WARMUP:
            times.append((time.perf_counter() - start) * 1000.0)
    times.sort()
    return Latency(statistics.median(times), times[int(0.9 * (len(times) - 1))], repeats,
                   torch.get_num_threads(), str(dev))


def as_dict(value: Latency | SelectionScore) -> dict[str, Any]:
    return asdict(value)
