"""The two anchors every PushT number is read against, on each seed range: holding still (the
agent never moves: what a policy that learned nothing scores) and the scripted expert (the
demonstrations' own author, imf/pusht/expert.py).

    python benchmarks/learning/anchors.py [--holdout 200] [--expert 200]

Writes benchmarks/learning_results/anchors.json: per anchor and seed range, episodes, first
seed, mean score ± SE and success rate ± SE, scored like a trial's rollouts (legacy reset, 300
steps). benchmarks/claims/claims.py quotes it.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from imf.config import load_config
from imf.seeds import HOLDOUT, SELECTION
from imf.pusht import run_expert_episode, score_policy
from imf.stats import standard_error

OUT = Path(__file__).resolve().parents[1] / "learning_results" / "anchors.json"
N_ACTION_STEPS = 8


def hold_still(obs: dict[str, np.ndarray]) -> np.ndarray:
    """Every action is the agent's own position: it never moves."""
    here = obs["agent_pos"][:, -1:, :].astype(np.float32)  # (B, 1, 2)
    return np.repeat(here, N_ACTION_STEPS, axis=1)  # (B, n_action_steps, 2)


def summary(per_seed: list[float], success: list[float], first: int, seconds: float) -> dict:
    return {"episodes": len(per_seed), "seed_start": first, "mean": float(np.mean(per_seed)),
            "se": standard_error(per_seed), "success_rate": float(np.mean(success)),
            "success_se": standard_error(success), "seconds": round(seconds, 1)}


def score_hold_still(seeds: list[int]) -> dict:
    started = time.perf_counter()
    result = score_policy(hold_still, seeds, max_steps=300, n_obs_steps=2, n_action_steps=N_ACTION_STEPS,
                          legacy=True, obs_type="keypoints")
    return summary([result.per_seed[s] for s in seeds], [float(result.per_seed_success[s]) for s in seeds],
                   seeds[0], time.perf_counter() - started)


def score_expert(seeds: list[int]) -> dict:
    """The scorer's episode score: the best coverage over the episode / 0.95, capped at 1."""
    started = time.perf_counter()
    episodes = [run_expert_episode(s, legacy=True) for s in seeds]
    scores = [min(e.max_coverage / 0.95, 1.0) for e in episodes]
    return summary(scores, [float(e.success) for e in episodes], seeds[0], time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holdout", type=int, default=200, help="holdout and selection episodes of holding still")
    parser.add_argument("--expert", type=int, default=200, help="holdout episodes of the scripted expert")
    args = parser.parse_args()
    ev = load_config("pusht_lowdim_cpu").eval
    test = list(range(ev.test_start_seed, ev.test_start_seed + ev.n_test))
    ranges = {"test": test, "selection": list(range(SELECTION.start, SELECTION.start + args.holdout)),
              "holdout": list(range(HOLDOUT.start, HOLDOUT.start + args.holdout))}
    result = {"hold_still": {name: score_hold_still(seeds) for name, seeds in ranges.items()},
              "expert": {"test": score_expert(test),
                         "holdout": score_expert(list(range(HOLDOUT.start, HOLDOUT.start + args.expert)))}}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
