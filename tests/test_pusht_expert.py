"""The scripted expert succeeds, and its demonstrations round-trip through the reader."""
import numpy as np
import pytest

from imf.data.dataset import PushTImageDataset
from imf.data.replay_buffer import ReplayBuffer
from imf.errors import DataError
from imf.pusht import expert as expert_module
from imf.pusht import planner
from imf.pusht.expert import ensure_demo_dataset, make_demo_dataset, run_expert_episode


def test_expert_solves_an_episode_with_mouse_like_targets():
    episode = run_expert_episode(100000, record=True)
    assert episode.success and episode.max_coverage > 0.95 and episode.steps <= 300
    actions = episode.arrays["action"]
    assert np.abs(np.diff(actions, axis=0)).max() <= planner.MAX_TARGET_STEP + 1e-3


def test_a_faster_expert_runs_the_same_kind_of_plan_in_fewer_steps():
    """Pace 2 doubles the push speed and the travelling step: the episode still succeeds, in fewer
    control steps, with targets at most twice as far apart; pace 1 is the expert's own."""
    seed = 100000
    own = run_expert_episode(seed, record=True)
    assert np.array_equal(run_expert_episode(seed, planner.ScriptedExpert(pace=1.0), record=True).arrays["action"],
                          own.arrays["action"])
    fast = run_expert_episode(seed, record=True, recipe=expert_module.DemoRecipe(pace=2.0))
    assert fast.success and fast.max_coverage > 0.95 and fast.steps < own.steps
    jumps = np.abs(np.diff(fast.arrays["action"], axis=0)).max()
    assert planner.MAX_TARGET_STEP + 1e-3 < jumps <= 2 * planner.MAX_TARGET_STEP + 1e-3
    assert expert_module.DemoRecipe(pace=2.0).tag == "_pace2" and "2x the expert's speeds" in \
        expert_module.DemoRecipe(pace=2.0).describe()
    for bad in (0.0, -1.0, 4.5, True):
        with pytest.raises(DataError, match=r"data.expert_pace .*\(0, 4\]"):
            expert_module.DemoRecipe(pace=bad)


def test_route_keeps_clear_of_the_block():
    pose = (256.0, 256.0, 0.3)
    targets = planner.route((256.0, 120.0), (256.0, 420.0), (0.0, -1.0), pose)
    steps = np.diff(np.array([(256.0, 120.0)] + targets), axis=0)
    assert np.hypot(*steps.T).max() <= planner.MAX_TARGET_STEP + 1e-9
    for a, b in zip(targets[:-1], targets[1:]):
        assert planner._clear(a, b, pose, margin=planner.AGENT_RADIUS)


def test_demo_dataset_is_cached_and_round_trips(tmp_path):
    path = ensure_demo_dataset(2, seed=5, cache_dir=tmp_path)
    stamp = (path / "meta" / "episode_ends" / ".zarray").stat().st_mtime_ns
    assert ensure_demo_dataset(2, seed=5, cache_dir=tmp_path) == path
    assert (path / "meta" / "episode_ends" / ".zarray").stat().st_mtime_ns == stamp
    buf = ReplayBuffer.open(path)
    assert buf.n_episodes == 2 and set(buf.arrays) == {"img", "state", "action", "keypoint", "n_contacts"}
    assert buf.arrays["img"].shape == (buf.n_steps, 96, 96, 3) and buf.arrays["img"].dtype == np.uint8
    ds = PushTImageDataset(buf, horizon=10, n_obs_steps=2, n_action_steps=8)
    item = ds[len(ds) - 1]
    assert item["obs"]["image"].shape == (2, 3, 96, 96) and item["action"].shape == (10, 2)
    assert not [p for p in tmp_path.iterdir() if "tmp" in p.name]


def test_a_bad_output_path_fails_before_the_expert_runs(tmp_path, monkeypatch):
    def no_expert(*args, **kwargs):
        raise AssertionError("the expert ran before the output path was checked")

    monkeypatch.setattr(expert_module, "run_expert_episode", no_expert)
    (tmp_path / "afile").write_text("")
    with pytest.raises(DataError, match="cannot create the folder"):
        make_demo_dataset(tmp_path / "afile" / "demo.zarr", 1)
    (tmp_path / "notes").mkdir()
    with pytest.raises(DataError, match="not a zarr store"):
        make_demo_dataset(tmp_path / "notes", 1)


@pytest.mark.slow
def test_expert_success_rate_on_20_seeds():
    episodes = [run_expert_episode(seed) for seed in range(200, 220)]
    assert sum(e.success for e in episodes) >= 19
