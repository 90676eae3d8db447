"""Score a policy on PushT: per-seed max reward, test_mean_score and success rate.

Environments run in worker processes (or in this process for n_workers <= 1); the policy stays
in the calling process and is called once per action chunk on every unfinished episode at
once, in seed order, so the same seeds give the same scores whatever the number of workers.
"""
from __future__ import annotations

import pickle
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from imf.errors import ImfError
from imf.pusht import geometry as geo
from imf.data import agent_pos_of
from imf.pusht.env import OBS_TYPES, PushTEnv

Policy = Callable[[dict[str, np.ndarray]], Any]


@dataclass
class ScoreResult:
    mean_score: float
    success_rate: float
    per_seed: dict[int, float]
    per_seed_success: dict[int, bool]
    per_seed_steps: dict[int, int] = field(default_factory=dict)


@dataclass
class EpisodeReport:
    """What a chunk of steps left behind for one episode."""
    observations: list[Any]     # the last observations of the chunk, oldest first
    max_reward: float
    max_coverage: float
    steps: int
    finished: bool


class EnvGroup:
    """The episodes one process runs, keyed by their index in the seed list."""

    def __init__(self, legacy: bool, obs_type: str, max_steps: int, keep_obs: int) -> None:
        self.legacy, self.obs_type = legacy, obs_type
        self.max_steps, self.keep_obs = max_steps, keep_obs
        self.envs: dict[int, PushTEnv] = {}
        self.reports: dict[int, EpisodeReport] = {}

    def reset(self, assignments: list[tuple[int, int]]) -> dict[int, EpisodeReport]:
        for index, seed in assignments:
            env = PushTEnv(self.obs_type, legacy=self.legacy)
            obs, info = env.reset(seed=seed)
            obs = self._compact(obs)
            self.envs[index] = env
            cov = info["coverage"]
            self.reports[index] = EpisodeReport([obs], geo.reward_from_coverage(cov), cov, 0,
                                                cov > geo.SUCCESS_COVERAGE)
        return {i: self.reports[i] for i, _ in assignments}

    def _compact(self, obs: Any) -> Any:
        """Images as uint8 (3, 96, 96), like the reference's 8-bit frames; 4x less to send."""
        if self.obs_type != "image":
            return obs
        return {"image": np.rint(obs["image"] * 255.0).astype(np.uint8), "agent_pos": obs["agent_pos"]}

    def step(self, chunks: dict[int, np.ndarray]) -> dict[int, EpisodeReport]:
        """Run each episode's chunk (k, 2), stopping at success or max_steps."""
        out = {}
        for index, chunk in chunks.items():
            env, report = self.envs[index], self.reports[index]
            recent: deque = deque(maxlen=self.keep_obs)
            for k, action in enumerate(chunk):
                if report.finished:
                    break
                # only the chunk's last observations reach the policy
                obs, reward, terminated, _, info = env.step(action, observe=k >= len(chunk) - self.keep_obs)
                if obs is not None:
                    recent.append(self._compact(obs))
                report.steps += 1
                report.max_reward = max(report.max_reward, reward)
                report.max_coverage = max(report.max_coverage, info["coverage"])
                report.finished = terminated or report.steps >= self.max_steps
            report.observations = list(recent)
            out[index] = report
        return out


class _WorkerPool:
    """EnvGroups in worker interpreters, driven in parallel (send to all, then receive)."""

    def __init__(self, n_workers: int, args: tuple) -> None:
        self.procs = [subprocess.Popen([sys.executable, "-m", "imf.pusht.worker"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                      for _ in range(n_workers)]
        self.call("init", [args] * n_workers)

    def call(self, command: str, payloads: list) -> dict:
        busy = [(proc, p) for proc, p in zip(self.procs, payloads) if p]
        try:
            for proc, payload in busy:
                pickle.dump((command, payload), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.flush()
            answers = [pickle.load(proc.stdout) for proc, _ in busy]
        except (EOFError, OSError, pickle.UnpicklingError):
            raise ImfError("a PushT scoring worker died; rerun with n_workers=1 to see why") from None
        merged: dict = {}
        for status, value in answers:
            if status != "ok":
                raise ImfError(f"a PushT scoring worker failed: {value}")
            if value:
                merged.update(value)
        return merged

    def close(self) -> None:
        for proc in self.procs:
            try:
                pickle.dump(("close", None), proc.stdin)
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


def _actions_array(raw: Any, batch: int, n_action_steps: int) -> np.ndarray:
    if hasattr(raw, "detach"):  # a torch tensor, wherever it lives
        raw = raw.detach().cpu().numpy()
    try:
        actions = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImfError(f"policy returned {type(raw).__name__}, not an array of numbers "
                       f"of shape ({batch}, >= {n_action_steps}, 2)") from None
    if actions.ndim != 3 or actions.shape[0] != batch or actions.shape[1] < n_action_steps \
            or actions.shape[2] != 2:
        raise ImfError(f"policy returned actions of shape {actions.shape}; expected "
                       f"({batch}, >= {n_action_steps}, 2)")
    return actions[:, :n_action_steps]


def _batch_observations(histories: list[deque], obs_type: str) -> dict[str, np.ndarray]:
    if obs_type == "image":
        images = np.stack([np.stack([o["image"] for o in h]) for h in histories])  # uint8
        return {"image": images.astype(np.float32) / np.float32(255.0),
                "agent_pos": np.stack([np.stack([o["agent_pos"] for o in h]) for h in histories])}
    stacked = np.stack([np.stack(list(h)) for h in histories])  # (B, n_obs, D)
    if obs_type == "keypoints":  # (B, n_obs, 20)
        return {"keypoints": stacked, "agent_pos": np.ascontiguousarray(agent_pos_of(stacked))}
    return {"state": stacked, "agent_pos": stacked[..., :2].copy()}  # (B, n_obs, 5)


def _hold_non_finite(actions: np.ndarray, agent_pos: np.ndarray) -> np.ndarray:
    """A non-finite action (a diverged policy) keeps the agent where it is."""
    bad = ~np.isfinite(actions).all(axis=-1)  # (B, k)
    if bad.any():
        actions = actions.copy()
        actions[bad] = np.broadcast_to(agent_pos[:, None, :], actions.shape)[bad]
    return actions


def score_policy(policy: Policy, seeds: list[int], *, max_steps: int = 300, n_obs_steps: int = 2,
                 n_action_steps: int = 8, n_workers: int = 1, legacy: bool = True,
                 obs_type: str = "image") -> ScoreResult:
    """Roll the policy out once per seed and score it like the reference runner."""
    seeds = [int(s) for s in seeds]
    if not seeds or n_obs_steps < 1 or n_action_steps < 1 or max_steps < 1:
        raise ImfError(f"score_policy needs seeds and positive step counts; got {len(seeds)} seeds, "
                       f"n_obs_steps={n_obs_steps}, n_action_steps={n_action_steps}, max_steps={max_steps}")
    if len(set(seeds)) != len(seeds):
        raise ImfError(f"score_policy seeds must be distinct; got {seeds}")
    if obs_type not in OBS_TYPES:
        raise ImfError(f"score_policy obs_type '{obs_type}' is unknown; allowed: {', '.join(OBS_TYPES)}")
    args = (legacy, obs_type, max_steps, n_obs_steps)
    n_workers = min(max(int(n_workers), 1), len(seeds))
    if n_workers == 1:
        group = EnvGroup(*args)
        run = lambda command, parts: getattr(group, command)(parts[0])  # noqa: E731
        close = lambda: None  # noqa: E731
    else:
        pool = _WorkerPool(n_workers, args)
        run, close = pool.call, pool.close
    try:
        return _rollout(policy, seeds, run, n_workers, n_obs_steps, n_action_steps, obs_type)
    finally:
        close()


def _rollout(policy: Policy, seeds: list[int], run, n_workers: int, n_obs_steps: int,
             n_action_steps: int, obs_type: str) -> ScoreResult:
    owner = {i: i % n_workers for i in range(len(seeds))}
    reports = run("reset", [[(i, s) for i, s in enumerate(seeds) if owner[i] == w]
                            for w in range(n_workers)])
    histories = [deque([reports[i].observations[0]] * n_obs_steps, maxlen=n_obs_steps)
                 for i in range(len(seeds))]
    while True:
        active = [i for i in range(len(seeds)) if not reports[i].finished]
        if not active:
            break
        obs = _batch_observations([histories[i] for i in active], obs_type)
        actions = _actions_array(policy(obs), len(active), n_action_steps)  # (B, k, 2)
        actions = _hold_non_finite(actions, obs["agent_pos"][:, -1].astype(np.float64))
        parts = [{i: actions[b] for b, i in enumerate(active) if owner[i] == w} for w in range(n_workers)]
        for i, report in run("step", parts).items():
            reports[i] = report
            histories[i].extend(report.observations)
    per_seed = {s: float(reports[i].max_reward) for i, s in enumerate(seeds)}
    success = {s: bool(reports[i].max_coverage > geo.SUCCESS_COVERAGE) for i, s in enumerate(seeds)}
    return ScoreResult(mean_score=float(np.mean(list(per_seed.values()))),
                       success_rate=float(np.mean(list(success.values()))),
                       per_seed=per_seed, per_seed_success=success,
                       per_seed_steps={s: reports[i].steps for i, s in enumerate(seeds)})
