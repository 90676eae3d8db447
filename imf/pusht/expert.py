"""Scripted demonstrations: run the expert, record the reference replay-buffer layout, cache it.

`ensure_demo_dataset(n_episodes, seed)` makes the data set once per (episodes, seed, format
version) under $IMF_CACHE (or ~/.cache/imf) and returns its path; a lock keeps parallel trials
from making it twice, and the store is written under a temporary name and renamed. The episode
seeds of a set run in order and the failed ones are skipped, so a set is the first episodes of
any larger set of its seed: when one of those is cached, its first episodes are copied instead
of running the expert again.

A `DemoRecipe` says how the episodes are recorded (the plain expert by default), and a set of
another recipe is cached under its own name, never mixed with a plain one:
- ``noise`` (world units) perturbs what the expert's targets do, not what is recorded: each
  executed target is the expert's plus a Gaussian draw of that standard deviation (seeded by
  the episode), and the stored action is the expert's own target. The data then holds states a
  little off the expert's path, each labelled with where the expert steers (DART, Laskey et al.
  2017): the states a policy's own small errors lead to.
- ``finish`` (a coverage) keeps the expert pushing after the task's success (coverage > 0.95)
  until the coverage reaches it, or FINISH_STEPS more steps: the plain expert stops the moment
  it crosses the threshold, so its data never shows a T pushed past it.
- ``pace`` (a factor, 1 the plain expert's) scales the expert's push speed and the step between
  its targets while travelling: the same plans, carried out in fewer control steps, recorded
  as executed. A policy imitates its demonstrator's speed, and the task's episodes end at 300
  steps.
"""
from __future__ import annotations

import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from imf.data import copy_episodes, prepare_output, read_episode_ends, write_episodes
from imf.errors import DataError
from imf.pusht.env import WORLD_SIZE, PushTEnv
from imf.pusht.planner import ScriptedExpert
from imf.seeds import DEMO_START

DEMO_FORMAT_VERSION = 3  # 2: targets clipped to the arena; 3: the reference's block fill and goal pixels
DEMO_SEED_BASE = DEMO_START  # episode seeds start here: above every seed range of imf/seeds.py
MAX_STEPS = 300
FINISH_STEPS = 40  # the most steps the expert goes on after success when a recipe asks it to finish
MAX_PACE = 4.0  # past it a travelling target jumps more than 120 units a step: no longer mouse-like


# Each recipe field: the values it allows in words, their check, and what its default means.
RECIPE_RANGES: dict[str, tuple[str, Callable[[float], bool], str]] = {
    "noise": ("a standard deviation in world units, 0 or more", lambda v: 0.0 <= v < math.inf,
              "0: the expert's own path"),
    "finish": ("a coverage in (0, 1] to push on to after success", lambda v: 0.0 < v <= 1.0,
               "left out: stop at success"),
    "pace": (f"a factor on the expert's speeds in (0, {MAX_PACE:g}]", lambda v: 0.0 < v <= MAX_PACE,
             "1: the expert's own"),
}


def check_recipe(values: dict[str, object], where: Callable[[str], str]) -> None:
    """Raise DataError naming ``where(field)`` (a config key or a flag) for the first recipe value
    its range does not allow; NaN and booleans never are, and a finish left out (None) always is."""
    for name, value in values.items():
        allowed, ok, default = RECIPE_RANGES[name]
        if name == "finish" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not ok(value):
            raise DataError(f"{where(name)} {value!r}: give {allowed} ({default})")


@dataclass(frozen=True)
class DemoRecipe:
    """How the expert's episodes are recorded: the executed targets' noise (world units) and the
    coverage to finish at after success (None: stop at success), and the factor on its speeds.
    Bad values raise DataError naming the config key."""

    noise: float = 0.0
    finish: float | None = None
    pace: float = 1.0

    def __post_init__(self) -> None:
        check_recipe({name: getattr(self, name) for name in RECIPE_RANGES}, lambda name: f"data.expert_{name}")

    @property
    def tag(self) -> str:
        """The cached set's name suffix: "" for the plain expert."""
        return (f"_noise{self.noise:g}" if self.noise > 0 else "") + \
            (f"_finish{self.finish:g}" if self.finish is not None else "") + \
            (f"_pace{self.pace:g}" if self.pace != 1.0 else "")

    def describe(self) -> str:
        parts = ([f"the expert's executed targets perturbed by {self.noise:g} world units"] if self.noise > 0 else []) \
            + ([f"pushing on after success to coverage {self.finish:g}"] if self.finish is not None else []) \
            + ([f"at {self.pace:g}x the expert's speeds"] if self.pace != 1.0 else [])
        return ", ".join(parts)


PLAIN = DemoRecipe()


@dataclass
class ExpertEpisode:
    seed: int
    success: bool
    max_coverage: float
    steps: int
    seconds: float
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


def run_expert_episode(seed: int, expert: ScriptedExpert | None = None, max_steps: int = MAX_STEPS,
                       record: bool = False, legacy: bool = False, recipe: DemoRecipe = PLAIN) -> ExpertEpisode:
    """One expert episode from reset(seed), recorded as ``recipe`` says; with record=True, the
    replay-buffer rows."""
    expert = expert or ScriptedExpert(pace=recipe.pace)
    env = PushTEnv("state", legacy=legacy)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed) if recipe.noise > 0 else None
    rows: dict[str, list] = {k: [] for k in ("img", "state", "action", "keypoint", "n_contacts")}
    started = time.perf_counter()
    max_cov, steps, succeeded_at = info["coverage"], 0, None
    for action in expert.actions(env):
        if record:
            image = env.render_obs_image()  # (3, 96, 96) in [0, 1]
            rows["img"].append(np.rint(np.moveaxis(image, 0, -1) * 255.0).astype(np.uint8))
            rows["state"].append(obs)
            rows["action"].append(np.asarray(action, dtype=np.float32))
            rows["keypoint"].append(env.keypoints())
            rows["n_contacts"].append(np.float32([info["n_contacts"]]))
        executed = action if rng is None else np.clip(np.asarray(action) + rng.normal(0.0, recipe.noise, 2),
                                                      0.0, WORLD_SIZE)
        obs, _, done, _, info = env.step(executed)
        steps += 1
        max_cov = max(max_cov, info["coverage"])
        if done and succeeded_at is None:
            succeeded_at = steps
        if succeeded_at is not None and (recipe.finish is None or info["coverage"] >= recipe.finish
                                         or steps >= succeeded_at + FINISH_STEPS):
            break
        if steps >= max_steps:
            break
    arrays = {k: np.stack(v) for k, v in rows.items()} if record and rows["img"] else {}
    return ExpertEpisode(seed, succeeded_at is not None, float(max_cov), steps, time.perf_counter() - started, arrays)


def make_demo_dataset(path: str | os.PathLike, n_episodes: int, seed: int = 0,
                      progress: Callable[[ExpertEpisode], None] | None = None, recipe: DemoRecipe = PLAIN) -> Path:
    """Record n_episodes successful expert episodes (failures are skipped) into a zarr store."""
    if n_episodes < 1:
        raise DataError(f"a demo data set needs at least 1 episode, got {n_episodes}")
    prepare_output(path)  # a bad path fails now, not after the expert's work
    expert = ScriptedExpert(pace=recipe.pace)
    episodes: list[dict[str, np.ndarray]] = []
    first_seed, tries = DEMO_SEED_BASE * (seed + 1), 2 * n_episodes + 20
    # The images are 99% of the bytes (2000 episodes: 7.7 GB): each episode's go to a file and
    # come back memory-mapped, so the writer reads them from disk and memory stays one episode.
    with tempfile.TemporaryDirectory(prefix="imf-demo-images-") as spill:
        for episode_seed in range(first_seed, first_seed + tries):
            episode = run_expert_episode(episode_seed, expert, record=True, recipe=recipe)
            if episode.success and episode.arrays:
                episodes.append(_images_on_disk(episode.arrays, Path(spill) / f"{len(episodes)}.npy"))
            if progress is not None:
                progress(episode)
            if len(episodes) == n_episodes:
                break
        else:
            raise DataError(f"the scripted expert failed too often: {len(episodes)} of "
                            f"{n_episodes} demo episodes after {tries} tries"
                            + (f" ({recipe.describe()})" if recipe != PLAIN else ""))
        return write_episodes(path, episodes)


def _images_on_disk(arrays: dict[str, np.ndarray], file: Path) -> dict[str, np.ndarray]:
    np.save(file, arrays["img"])
    return {**arrays, "img": np.load(file, mmap_mode="r")}


def default_cache_dir() -> Path:
    return Path(os.environ.get("IMF_CACHE") or Path.home() / ".cache" / "imf")


def demo_dataset_path(n_episodes: int, seed: int = 0, cache_dir: str | os.PathLike | None = None,
                      recipe: DemoRecipe = PLAIN) -> Path:
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / f"pusht_demo_v{DEMO_FORMAT_VERSION}_n{n_episodes}_s{seed}{recipe.tag}.zarr"


def ensure_demo_dataset(n_episodes: int, seed: int = 0, cache_dir: str | os.PathLike | None = None,
                        progress: Callable[[ExpertEpisode], None] | None = None,
                        recipe: DemoRecipe = PLAIN) -> Path:
    """The cached scripted demo data set, made first if missing."""
    from filelock import FileLock
    path = demo_dataset_path(n_episodes, seed, cache_dir, recipe)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the demo cache folder '{path.parent}' ({exc}); "
                        f"set IMF_CACHE or data.cache_dir to a writable folder") from None
    with FileLock(str(path) + ".lock"):
        if _is_complete(path, n_episodes):
            return path
        if copy_from_cache(path, n_episodes, seed, path.parent, recipe) is not None:
            return path
        return make_demo_dataset(path, n_episodes, seed, progress, recipe)


def cached_sizes(seed: int = 0, cache_dir: str | os.PathLike | None = None,
                 recipe: DemoRecipe = PLAIN) -> list[int]:
    """The episode counts of the cached sets of ``seed`` and ``recipe`` in this format, smallest first."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    tag = recipe.tag
    name = re.compile(rf"pusht_demo_v{DEMO_FORMAT_VERSION}_n(\d+)_s{seed}{re.escape(tag)}\.zarr")
    found = (name.fullmatch(p.name) for p in root.glob(f"pusht_demo_v{DEMO_FORMAT_VERSION}_n*_s{seed}{tag}.zarr"))
    return sorted(int(m.group(1)) for m in found if m)


def copy_from_cache(path: str | os.PathLike, n_episodes: int, seed: int = 0,
                    cache_dir: str | os.PathLike | None = None, recipe: DemoRecipe = PLAIN) -> Path | None:
    """Write the first ``n_episodes`` of the smallest complete cached set of ``seed`` and
    ``recipe`` that has them (other than ``path`` itself) to ``path``; the set copied from, or
    None when there is none. A set whose lock is held (being made) is passed over, never waited for."""
    from filelock import FileLock, Timeout
    for size in cached_sizes(seed, cache_dir, recipe):
        source = demo_dataset_path(size, seed, cache_dir, recipe)
        if size < n_episodes or source.resolve() == Path(path).resolve():
            continue
        try:
            with FileLock(str(source) + ".lock", timeout=0):
                if _is_complete(source, size):
                    copy_episodes(source, path, n_episodes)
                    return source
        except Timeout:
            continue
        except DataError:  # a damaged cached set: the next one, or the expert, makes the data
            continue
    return None


def _is_complete(path: Path, n_episodes: int) -> bool:
    if not path.exists():
        return False
    try:
        return len(read_episode_ends(path)) == n_episodes
    except DataError:
        return False
