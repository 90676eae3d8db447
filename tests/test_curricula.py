"""Curricula (imf.curricula): the pools they give, the sampler that draws from a pool, the checks
before a run folder changes, and real trials with easy_first and doubling, one killed and resumed."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from imf import registry
from imf.cli import main
from imf.config import load_config
from imf.curricula import NoCurriculum, TrainEpisodes
from imf.curricula.doubling import Doubling, DoublingOptions
from imf.curricula.easy_first import EasyFirst, EasyFirstOptions, difficulty
from imf.data.keypoint_dataset import PushTKeypointDataset
from imf.data.replay_buffer import write_replay_buffer
from imf.data.pool import PoolSampler
from imf.errors import OptionError
from imf.pusht.geometry import GOAL_POSE
from imf_process import run_imf

TINY = ["training.max_train_steps=3", "training.batch_size=8", "eval.n_test=1", "eval.n_train=0",
        "eval.max_steps=8", "eval.n_workers=1", "data.demo_episodes=8", "logging.swanlab=false"]


def _episodes(n: int = 8) -> TrainEpisodes:
    rng = np.random.default_rng(0)
    state = np.zeros((n, 5))
    state[:, 2:4] = GOAL_POSE[:2] + rng.uniform(-200, 200, (n, 2))
    state[:, 4] = rng.uniform(-math.pi, math.pi, n)
    return TrainEpisodes(ids=np.arange(10, 10 + n), lengths=rng.integers(50, 300, n), first_state=state)


def test_the_builtins_are_plugins_of_their_group():
    assert registry.names("imf.curricula") == ["doubling", "easy_first", "none"]
    assert registry.get("imf.curricula", "none") is NoCurriculum
    assert load_config("smoke").data.curriculum == "none"


def test_none_is_every_episode_every_epoch():
    episodes = _episodes()
    assert NoCurriculum(None).pool(episodes, 0, 0.0).tolist() == episodes.ids.tolist()


def test_easy_first_starts_with_the_shortest_and_grows_to_all_by_the_ramp():
    episodes = _episodes(8)
    curriculum = EasyFirst(EasyFirstOptions(by="length", start=0.25, ramp=0.5))
    first = curriculum.pool(episodes, 0, 0.0)
    shortest = episodes.ids[np.argsort(episodes.lengths, kind="stable")[:2]]
    assert sorted(first.tolist()) == sorted(shortest.tolist())
    sizes = [len(curriculum.pool(episodes, 0, p)) for p in (0.0, 0.1, 0.25, 0.4, 0.5, 0.9)]
    assert sizes == sorted(sizes) and sizes[0] == 2 and sizes[-2:] == [8, 8]
    halfway = set(curriculum.pool(episodes, 0, 0.25).tolist())
    assert set(first.tolist()) <= halfway  # the pool only grows


def test_easy_first_by_distance_orders_by_the_ts_start_against_the_goal():
    episodes = _episodes(8)
    hardness = difficulty(episodes, "distance")
    state = episodes.first_state
    i = int(np.argmin(hardness))
    gap = math.hypot(state[i, 2] - GOAL_POSE[0], state[i, 3] - GOAL_POSE[1]) / 512
    turn = abs((state[i, 4] - GOAL_POSE[2] + math.pi) % (2 * math.pi) - math.pi) / math.pi
    assert hardness[i] == pytest.approx(gap + turn)
    pool = EasyFirst(EasyFirstOptions(by="distance", start=0.125)).pool(episodes, 0, 0.0)
    assert pool.tolist() == [episodes.ids[i]]


def test_doubling_stages_end_on_every_episode():
    episodes = _episodes(7)
    auto = Doubling(DoublingOptions(at_epochs=[2, 4]))
    assert [len(auto.pool(episodes, e, 0.0)) for e in range(6)] == [1, 1, 3, 3, 7, 7]
    given = Doubling(DoublingOptions(start_episodes=2, at_epochs=[1, 3]))
    assert [len(given.pool(episodes, e, 0.0)) for e in range(5)] == [2, 4, 4, 7, 7]
    assert given.pool(episodes, 0, 0.0).tolist() == episodes.ids[:2].tolist()  # the first in buffer order


@pytest.mark.parametrize("make, key", [
    (lambda: EasyFirstOptions(start=0.0), "start"), (lambda: EasyFirstOptions(ramp=1.5), "ramp"),
    (lambda: EasyFirstOptions(by="angle"), "by"), (lambda: DoublingOptions(start_episodes=-1), "start_episodes"),
    (lambda: DoublingOptions(at_epochs=[]), "at_epochs"), (lambda: DoublingOptions(at_epochs=[4, 4]), "at_epochs"),
])
def test_options_out_of_range_are_refused_naming_the_option(make, key):
    with pytest.raises(OptionError) as error:
        make()
    assert error.value.key == key


def test_the_pool_sampler_draws_what_random_sampler_draws_from_the_whole_set():
    window_episodes = np.repeat(np.arange(6), [30, 10, 25, 5, 40, 17])
    ours, theirs = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    sampler = PoolSampler(window_episodes, ours)
    assert list(sampler) == list(torch.utils.data.RandomSampler(range(len(window_episodes)), generator=theirs))


def test_an_epoch_over_a_pool_is_as_long_and_holds_only_the_pools_windows():
    window_episodes = np.repeat(np.arange(6), [30, 10, 25, 5, 40, 17])
    sampler = PoolSampler(window_episodes, torch.Generator().manual_seed(1))
    sampler.set_pool(np.array([1, 3]))  # 15 windows
    drawn = list(sampler)
    assert len(drawn) == len(window_episodes) == len(sampler)
    assert set(window_episodes[drawn]) == {1, 3}
    counts = np.bincount(drawn, minlength=len(window_episodes))[window_episodes == 1]
    assert counts.min() >= len(window_episodes) // 15  # every pool window, about equally often


def test_a_datasets_windows_know_their_episode(tmp_path):
    lengths = [12, 9, 15, 11]
    ends = np.cumsum(lengths)
    n = int(ends[-1])
    path = write_replay_buffer(tmp_path / "d.zarr", {
        "keypoint": np.zeros((n, 9, 2), np.float32), "state": np.zeros((n, 5), np.float32),
        "action": np.arange(2 * n, dtype=np.float32).reshape(n, 2)}, ends)
    data = PushTKeypointDataset(path, horizon=4, n_obs_steps=2, n_action_steps=2, val_ratio=0.0,
                                max_train_episodes=None)
    episode_of = data.window_episodes()
    starts = np.concatenate([[0], ends[:-1]])
    for w in range(len(data)):
        rows = data.sampler.frame_indices(w)
        assert starts[episode_of[w]] <= rows.min() and rows.max() < ends[episode_of[w]]


# ------------------------------------------------------------------ through the CLI


def _imf(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_imf(*args, cwd=cwd)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    from imf.pusht.expert import ensure_demo_dataset
    folder = tmp_path_factory.mktemp("demos")
    ensure_demo_dataset(8, seed=0, cache_dir=str(folder))
    return folder


@pytest.fixture
def no_state(tmp_path) -> Path:
    ends = np.array([20, 45, 70])
    return write_replay_buffer(tmp_path / "nostate.zarr", {
        "keypoint": np.zeros((70, 9, 2), np.float32), "action": np.zeros((70, 2), np.float32)}, ends)


@pytest.mark.parametrize("args, words", [
    (["data.curriculum=easy_first", "data.curriculum_options.start=1.5"],
     "'data.curriculum_options.start': must be in (0, 1], got 1.5"),
    (["data.curriculum=doubling", "data.curriculum_options.start_episodes=100"],
     "'data.curriculum_options.start_episodes': 100 is more than the"),
    (["data.curriculum=doubling", "data.curriculum_options.at_epochs=[3,2]"], "must be increasing epochs"),
    (["data.curriculum=hard"], "unknown curriculum 'hard' in imf.curricula; installed: doubling, easy_first, none"),
    (["data.curriculum=none", "data.curriculum_options.x=1"], "curriculum 'none' takes no options"),
    (["data.curriculum=easy_first", "data.curriculum_options.by=distance", "data.path=NOSTATE"],
     "needs the array 'data/state'"),
])
def test_a_bad_curriculum_is_one_line_exit_2_and_nothing_written(cache, tmp_path, no_state, args, words,
                                                                  monkeypatch, capsys):
    args = [a.replace("NOSTATE", str(no_state)) for a in args]
    run = tmp_path / "run"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["imf", "trial", "smoke", *TINY, f"data.cache_dir={cache}", *args,
                                      "--out", str(run)])
    with pytest.raises(SystemExit) as done:
        main()
    lines = capsys.readouterr().err.strip().splitlines()
    assert done.value.code == 2 and len(lines) == 1 and words in lines[0], lines
    assert not run.exists() and not (tmp_path / "scoreboard.jsonl").exists()


def _log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "logs.json.txt").read_text().splitlines()]


@pytest.mark.slow
def test_easy_first_runs_end_to_end_and_logs_its_pool(cache, tmp_path):
    run = tmp_path / "easy"
    done = _imf("trial", "smoke", *TINY, f"data.cache_dir={cache}", "training.num_epochs=4",
                "data.curriculum=easy_first", "data.curriculum_options.start=0.3",
                "data.curriculum_options.ramp=0.5", "--out", str(run), "--store", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sizes = [r["train_episodes"] for r in _log(run)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1] and sizes[2:] == [sizes[-1]] * 2
    assert "curriculum easy_first: epoch 1 trains on" in done.stdout
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"


@pytest.mark.slow
def test_a_killed_doubling_trial_resumes_in_the_right_stage(cache, tmp_path):
    """SIGTERM in the second stage, then --resume: every epoch's pool, before and after, is the
    one its epoch number gives."""
    run = tmp_path / "doubling"
    args = ["trial", "smoke", *TINY, f"data.cache_dir={cache}", "training.num_epochs=8",
            "training.checkpoint_every=1", "data.curriculum=doubling",
            "data.curriculum_options.at_epochs=[2,4]", "--out", str(run), "--store", "none"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SWANLAB_MODE": "offline"}
    proc = subprocess.Popen([sys.executable, "-m", "imf", *args], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=os.setpgrp)
    deadline = time.monotonic() + 300
    while not ((run / "logs.json.txt").exists() and len(_log(run)) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGSTOP)  # held in epoch 3 or 4, so SIGTERM lands before the last epoch
    os.kill(proc.pid, signal.SIGTERM)
    os.kill(proc.pid, signal.SIGCONT)
    proc.communicate(timeout=300)
    killed_at = len(_log(run))
    assert 3 <= killed_at < 8
    again = _imf("trial", "--resume", "--out", str(run), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    log = _log(run)
    assert [r["epoch"] for r in log] == list(range(8))
    total = log[-1]["train_episodes"]
    expected = [total // 4] * 2 + [total // 2] * 2 + [total] * 4
    assert [r["train_episodes"] for r in log] == expected
    stage = next(n for e, n in enumerate(expected) if e == killed_at)
    assert f"curriculum doubling: epoch {killed_at + 1} trains on {stage} of {total}" in again.stdout


LONGEST_FIRST = '''
from dataclasses import dataclass

import numpy as np


@dataclass
class Options:
    share: float = 0.5


class LongestFirst:
    """Only the longest share of the episodes, every epoch."""
    Options = Options

    def __init__(self, options):
        self.options = options

    def check(self, episodes):
        pass

    def pool(self, episodes, epoch, progress):
        n = max(1, int(len(episodes) * self.options.share))
        return np.sort(episodes.ids[np.argsort(-episodes.lengths, kind="stable")[:n]])
'''


def test_a_third_party_curriculum_is_listed_checked_and_used(tmp_path, monkeypatch, capsys):
    from imf.registry.contracts import check_installed
    from imf.train.curriculum import load_curriculum
    from plugin_fakes import fake_distribution

    root = fake_distribution(tmp_path / "site", "imf-longest", "imf_longest", LONGEST_FIRST,
                             {"imf.curricula": {"longest": "imf_longest:LongestFirst"}})
    monkeypatch.syspath_prepend(str(root))
    registry.clear_cache()
    assert "longest" in registry.names("imf.curricula") and check_installed("imf.curricula") == []
    cfg = load_config("smoke", ["data.curriculum=longest", "data.curriculum_options.share=0.25"])
    episodes = _episodes(8)
    pool = load_curriculum(cfg).pool(episodes, 0, 0.0)
    assert sorted(pool.tolist()) == sorted(episodes.ids[np.argsort(-episodes.lengths)[:2]].tolist())
    monkeypatch.setattr(sys, "argv", ["imf", "plugins"])
    with pytest.raises(SystemExit):
        main()
    listed = capsys.readouterr().out
    assert "imf.curricula:" in listed and "longest" in listed and "imf-longest 1.0" in listed
    registry.clear_cache()


def test_progress_is_the_schedules_share_of_epochs_or_budget():
    from imf.train.curriculum import progress_of
    budgeted = load_config("smoke", ["training.num_epochs=400", "training.time_budget_s=100"])
    assert progress_of(budgeted, 4, 50.0) == pytest.approx(0.5)  # the budget is further along
    assert progress_of(budgeted, 300, 10.0) == pytest.approx(0.75)  # the epochs are
    assert progress_of(budgeted, 400, 500.0) == 1.0
    plain = load_config("smoke", ["training.num_epochs=10"])
    assert progress_of(plain, 5, 1e6) == pytest.approx(0.5)  # no budget: the epochs alone
