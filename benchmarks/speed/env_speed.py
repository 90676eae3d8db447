"""PushT environment speed: control steps/s (state vs image observations, one process and N
workers), expert demos per minute, and the scripted expert's success on 200 reset seeds.

    python benchmarks/speed/env_speed.py [--workers 1,2,4] [--expert-seeds 200] [--steps-only]
    python benchmarks/speed/env_speed.py --expert-json

Writes its section of benchmarks/RESULTS.md (other sections are kept); --steps-only measures
just the state vs image control steps and prints them (nothing is written); --expert-json runs
only the scripted expert on its three seed sets (reset seeds 0..199, the demo seeds from
1,000,000, the legacy test seeds from 100000) and writes benchmarks/expert_quality.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

from imf.pusht import PushTEnv, run_expert_episode, score_policy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402  (benchmarks/common/results_file.py)

SECTION = "## PushT environment (benchmarks/speed/env_speed.py)"
EXPERT_JSON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "expert_quality.json")
EXPERT_SETS = {"reset": (0, 200, False), "demo": (1_000_000, 100, False), "legacy_test": (100000, 50, True)}


def expert_action_sequences(seeds) -> list[tuple[int, np.ndarray]]:
    return [(s, run_expert_episode(s, record=True).arrays["action"]) for s in seeds]


def replay_seconds(env: PushTEnv, seed: int, actions: np.ndarray) -> float:
    """Seconds to replay one expert episode's actions (contact-rich, like real episodes)."""
    env.reset(seed=seed)
    started = time.perf_counter()
    for action in actions:
        env.step(action)
    return time.perf_counter() - started


def step_rates(sequences, rounds: int) -> tuple[float, float]:
    """(state, image) control steps/s. The machine is shared: each episode is replayed with
    state and image observations in turn, `rounds` times, and its fastest time counts."""
    envs = {"state": PushTEnv("state"), "image": PushTEnv("image")}
    best = {o: [math.inf] * len(sequences) for o in envs}
    for _ in range(rounds):
        for i, (seed, actions) in enumerate(sequences):
            for obs_type, env in envs.items():
                best[obs_type][i] = min(best[obs_type][i], replay_seconds(env, seed, actions))
    steps = sum(len(actions) for _, actions in sequences)
    return steps / sum(best["state"]), steps / sum(best["image"])


def drift_policy(obs):
    pos = obs["agent_pos"][:, -1]
    return pos[:, None, :] + np.arange(1, 9)[None, :, None] * np.array([3.0, -2.0])


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the scoring workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def scoring_rate(n_workers: int, obs_type: str, n_episodes: int = 50,
                 max_steps: int = 300) -> tuple[float, float]:
    """(steps per wall second, CPU seconds of all processes) for one scoring run."""
    started, cpu = time.perf_counter(), _cpu_seconds()
    score_policy(drift_policy, list(range(100000, 100000 + n_episodes)), max_steps=max_steps,
                 n_workers=n_workers, obs_type=obs_type)
    return n_episodes * max_steps / (time.perf_counter() - started), _cpu_seconds() - cpu


def expert_quality(n_seeds: int) -> dict[str, float]:
    episodes = [run_expert_episode(seed) for seed in range(n_seeds)]
    return {"seeds": n_seeds, "success": np.mean([e.success for e in episodes]),
            "coverage": np.mean([e.max_coverage for e in episodes]),
            "steps": np.mean([e.steps for e in episodes]),
            "seconds": np.mean([e.seconds for e in episodes])}


def expert_sets() -> dict:
    """The scripted expert on each seed set of EXPERT_SETS (success is coverage > 0.95 within
    its max steps); seconds are wall time on whatever machine ran it."""
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
           "load_average_start": os.getloadavg()[0], "sets": {}}
    for name, (first, n, legacy) in EXPERT_SETS.items():
        episodes = [run_expert_episode(seed, legacy=legacy) for seed in range(first, first + n)]
        out["sets"][name] = {"first_seed": first, "episodes": n, "legacy": legacy,
                             "successes": int(sum(e.success for e in episodes)),
                             "mean_max_coverage": float(np.mean([e.max_coverage for e in episodes])),
                             "mean_steps": float(np.mean([e.steps for e in episodes])),
                             "mean_seconds": float(np.mean([e.seconds for e in episodes]))}
    out["load_average_end"] = os.getloadavg()[0]
    return out


def demos_per_minute(n: int = 10) -> float:
    started = time.perf_counter()
    for seed in range(1000, 1000 + n):
        run_expert_episode(seed, record=True)
    return 60.0 * n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--expert-seeds", type=int, default=200)
    parser.add_argument("--steps-only", action="store_true", help="only state vs image steps; print them")
    parser.add_argument("--expert-json", action="store_true",
                        help="only the expert's seed sets; write benchmarks/expert_quality.json")
    args = parser.parse_args()
    if args.expert_json:
        result = expert_sets()
        with open(EXPERT_JSON, "w") as f:
            f.write(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
        return
    workers = [int(w) for w in args.workers.split(",")]

    sequences = expert_action_sequences(range(500, 510))
    state_rate, image_rate = step_rates(sequences, rounds=7)
    if args.steps_only:
        print(f"state {state_rate:,.0f} steps/s ({1e6 / state_rate:.1f} us), image {image_rate:,.0f} "
              f"steps/s ({1e6 / image_rate:.1f} us), image/state cost {state_rate / image_rate:.2f}")
        return
    scoring = {(w, o): scoring_rate(w, o) for o in ("state", "image") for w in workers}
    quality = expert_quality(args.expert_seeds)
    demos = demos_per_minute()

    lines = [f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"{os.cpu_count()} CPUs visible, load average {os.getloadavg()[0]:.1f} at the end "
             f"(other jobs share the machine: absolute rates are pessimistic), Python {platform.python_version()}.",
             "",
             "| measurement | value |", "|---|---|",
             f"| state-obs control steps/s, one process (replaying expert actions) | {state_rate:,.0f} |",
             f"| image-obs control steps/s, one process (same actions) | {image_rate:,.0f} |",
             f"| image step cost / state step cost (target <= 1.5) | {state_rate / image_rate:.2f} |"]
    base = {o: scoring[(workers[0], o)][0] for o in ("state", "image")}
    for (w, o), (rate, cpu) in scoring.items():
        lines.append(f"| scoring 50 x 300 steps, {o} obs, {w} worker(s): steps/s (speed-up vs {workers[0]}); "
                     f"CPU s of all processes | {rate:,.0f} ({rate / base[o]:.2f}x); {cpu:.2f} |")
    lines += [f"| expert demos per minute (recorded, one process) | {demos:.0f} |",
              f"| expert success on reset seeds 0..{quality['seeds'] - 1} (coverage > 0.95 within 300 steps) "
              f"| {quality['success']:.1%} |",
              f"| expert mean max coverage | {quality['coverage']:.3f} |",
              f"| expert mean steps per episode | {quality['steps']:.1f} |",
              f"| expert seconds per episode (one core) | {quality['seconds']:.3f} |"]
    lines += ["",
              "Notes. The image/state ratio replays 10 expert episodes, where the block moves (and is "
              "re-rendered) on about a third of the steps; each episode is replayed 7 times with state "
              "and image observations in turn and its fastest time counts, so other jobs on the "
              "machine disturb the ratio little. The scorer renders only the observations "
              "the policy will see (the last n_obs_steps of each chunk). Worker scaling needs free "
              "cores: each worker is a fresh interpreter (about 0.2 s of CPU to start, visible in the "
              "CPU column), the episodes split evenly across workers, and the calling process (policy "
              "and batching) needs a core too, so on a 2-core machine 2 workers can give at most "
              "about 1.3-1.5x on a run this short, and nothing when other jobs hold the cores."]
    write_section(SECTION, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
