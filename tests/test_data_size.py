"""A data size larger than the data set, and several values where one belongs: one line on
stderr, exit 2, and no run or sweep folder written."""
from __future__ import annotations

import numpy as np
import pytest

from imf.config import MAX_TRAIN_CAP, load_config
from imf.data.replay_buffer import write_replay_buffer
from imf.data.size import check_data_size
from imf.errors import ConfigError, DataError, SweepError
from imf.sweep.plan import build_trials
from imf_process import run_imf


def _store(path, episodes: int = 5, length: int = 12):
    """A real replay buffer of ``episodes`` episodes (with data.val_ratio 0.2: 1 validation, 4 training)."""
    n = episodes * length
    rng = np.random.default_rng(0)
    arrays = {"img": rng.integers(0, 255, (n, 96, 96, 3), dtype=np.uint8),
              "state": rng.random((n, 5), dtype=np.float32), "action": rng.random((n, 2), dtype=np.float32)}
    return write_replay_buffer(path, arrays, np.arange(1, episodes + 1) * length)


def _data(*overrides: str):
    return load_config("smoke", list(overrides)).data


def test_a_size_above_the_training_episodes_is_refused_and_the_cap_is_not(tmp_path):
    store = _store(tmp_path / "five.zarr")
    with pytest.raises(ConfigError) as refused:
        check_data_size(_data(f"data.path={store}", "data.max_train_episodes=5"), MAX_TRAIN_CAP)
    assert str(refused.value) == (f"config key 'data.max_train_episodes': 5 is more than the 4 training episodes "
                                  f"of data.path '{store}' (5 episodes, 1 held out for validation at "
                                  f"data.val_ratio 0.2); give at most 4, or null for all of them")
    for fits in ("4", "null", str(MAX_TRAIN_CAP)):  # the default is the reference's cap: never refused
        check_data_size(_data(f"data.path={store}", f"data.max_train_episodes={fits}"), MAX_TRAIN_CAP)
    check_data_size(_data("data.val_ratio=0", f"data.path={store}", "data.max_train_episodes=5"), MAX_TRAIN_CAP)
    with pytest.raises(ConfigError, match=r"7 is more than the 6 training episodes of the scripted demo set "
                                          r"\(8 episodes, 2 held out .*or a larger data.demo_episodes$"):
        check_data_size(_data("data.max_train_episodes=7"), MAX_TRAIN_CAP)


def test_a_sweep_skips_a_store_that_is_not_here_and_a_trial_does_not(tmp_path):
    away = _data(f"data.path={tmp_path / 'on-the-gpu-host.zarr'}", "data.max_train_episodes=500")
    check_data_size(away, MAX_TRAIN_CAP, only_local=True)
    with pytest.raises(DataError, match="does not exist"):
        check_data_size(away, MAX_TRAIN_CAP)


def test_a_sweep_plan_refuses_a_too_large_axis_value_and_a_list_in_an_override(tmp_path):
    store = _store(tmp_path / "five.zarr")
    with pytest.raises(ConfigError, match="'data.max_train_episodes': 8 is more than the 4 training episodes"):
        build_trials("s", "smoke", ["data.max_train_episodes=2,4,8"], [f"data.path={store}"])
    with pytest.raises(ConfigError, match="5 is more than the 3 training episodes of the scripted demo set"):
        build_trials("s", "smoke", ["data.demo_episodes=4,8"], ["data.max_train_episodes=5"])
    assert len(build_trials("s", "smoke", ["data.demo_episodes=8,16"], ["data.max_train_episodes=6"])) == 2
    with pytest.raises(SweepError, match=r"^override 'training.lr=1e-4,3e-4' gives training.lr several values, "
                                         r"and an override holds for every trial; sweep it as an axis with "
                                         r"--grid training.lr=1e-4,3e-4$"):
        build_trials("s", "smoke", [], ["training.lr=1e-4,3e-4"])
    assert len(build_trials("s", "smoke", [], ["logging.trackers=none,tensorboard"])) == 1  # a list key


def _refused(args: list[str], needle: str, cwd) -> None:
    out = run_imf(*args, cwd=cwd)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, (args, out.stderr)
    assert len(lines) == 1 and lines[0].startswith("imf: error: ") and needle in lines[0], (args, out.stderr)


@pytest.mark.slow
def test_bad_data_sizes_through_the_command_line_write_nothing(tmp_path):
    store = _store(tmp_path / "five.zarr")
    too_many = "'data.max_train_episodes': 5 is more than the 4 training episodes of data.path"
    _refused(["trial", "smoke", f"data.path={store}", "data.max_train_episodes=5", "--out", "run"], too_many, tmp_path)
    _refused(["trial", "smoke", "data.max_train_episodes=20", "--out", "demo"],
             "20 is more than the 6 training episodes of the scripted demo set", tmp_path)
    _refused(["sweep", "smoke", f"data.path={store}", "--grid", "data.max_train_episodes=2,5", "--queue", "local:cpu",
              "--name", "grid", "--out", "sweeps"], too_many, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["five.zarr"]


@pytest.mark.slow
def test_several_values_in_an_override_or_set_point_at_the_grid(tmp_path):
    grid = "sweep it as an axis with --grid data.demo_episodes=100,200"
    _refused(["sweep", "smoke", "data.demo_episodes=100,200", "--queue", "local:cpu", "--out", "sweeps"], grid,
             tmp_path)
    _refused(["sweep", "smoke", "--set", "data.demo_episodes=100,200", "--out", "sweeps"],
             "no option --set: a setting is a KEY=VALUE word after CONFIG, e.g. data.demo_episodes=100 (for every "
             "trial); an axis of the sweep is --grid data.demo_episodes=100,200", tmp_path)
    assert not list(tmp_path.iterdir())
