"""A demo set is the first episodes of any larger set of its seed: made from a cached larger set
by copying, it is the same store as one the expert made from scratch."""
from __future__ import annotations

import json

import numpy as np
import pytest
import zarr
from filelock import FileLock

from imf.errors import DataError
from imf.pusht import expert as expert_module
from imf.pusht.expert import DemoRecipe, cached_sizes, demo_dataset_path, ensure_demo_dataset

NOISY = DemoRecipe(noise=5.0)
from imf_process import run_imf

SEED = 3


def _no_expert(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the expert ran; the set should have been copied")
    monkeypatch.setattr(expert_module, "run_expert_episode", refuse)


def _metadata(store):
    """Every metadata file of the store (group and array attributes, shapes, chunks, codecs)."""
    return {str(p.relative_to(store)): json.loads(p.read_text())
            for p in sorted(store.rglob("*")) if p.name in (".zarray", ".zattrs", ".zgroup", "zarr.json")}


def _arrays(store):
    group = zarr.open_group(str(store), mode="r")
    names = [f"data/{name}" for name in group["data"].array_keys()] + ["meta/episode_ends"]
    return {name: np.asarray(group[name][:]) for name in names}


def assert_same_store(a, b):
    assert _metadata(a) == _metadata(b)
    left, right = _arrays(a), _arrays(b)
    assert left.keys() == right.keys() and len(left) == 6
    for name in left:
        assert left[name].dtype == right[name].dtype, name
        assert np.array_equal(left[name], right[name]), name


@pytest.fixture(scope="module")
def twelve(tmp_path_factory):
    """A cache holding a 12-episode set of SEED, and a cache holding 6 made from scratch."""
    big, fresh = tmp_path_factory.mktemp("big"), tmp_path_factory.mktemp("fresh")
    ensure_demo_dataset(12, seed=SEED, cache_dir=big)
    return big, ensure_demo_dataset(6, seed=SEED, cache_dir=fresh)


def test_six_from_the_cached_twelve_is_the_six_made_from_scratch(twelve, tmp_path, monkeypatch):
    big, fresh = twelve
    cache = tmp_path / "cache"
    cache.mkdir()
    source = demo_dataset_path(12, SEED, big)
    (cache / source.name).symlink_to(source)  # the module's 12-set, left as it was
    _no_expert(monkeypatch)
    derived = ensure_demo_dataset(6, seed=SEED, cache_dir=cache)
    assert derived == demo_dataset_path(6, SEED, cache) and not derived.is_symlink()
    assert_same_store(derived, fresh)
    assert cached_sizes(SEED, cache) == [6, 12] and cached_sizes(SEED + 1, cache) == []
    assert not [p for p in cache.iterdir() if "tmp" in p.name]
    assert ensure_demo_dataset(6, seed=SEED, cache_dir=cache) == derived  # cached now


def test_a_set_being_made_or_of_another_seed_is_not_copied(twelve, tmp_path):
    big, fresh = twelve
    source = demo_dataset_path(12, SEED, big)
    for cache, name in ((tmp_path / "other", demo_dataset_path(12, SEED + 1, big).name),
                        (tmp_path / "busy", source.name)):
        cache.mkdir()
        (cache / name).symlink_to(source)  # another seed's name: its episodes are not ours
        with FileLock(str(cache / source.name) + ".lock"):  # as if the 12-set were being made
            made = ensure_demo_dataset(6, seed=SEED, cache_dir=cache)
        assert_same_store(made, fresh)  # the expert made it: the same data either way


@pytest.mark.slow
def test_imf_data_demo_copies_from_the_cache(twelve, tmp_path):
    big, fresh = twelve
    proc = run_imf("data", "demo", "--episodes", "6", "--seed", str(SEED), "--out", str(tmp_path / "six.zarr"),
                   env={"IMF_CACHE": str(big)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == (f"wrote 6 episodes to {tmp_path / 'six.zarr'}: the first 6 of the cached "
                                   f"{demo_dataset_path(12, SEED, big)} (the same episode seeds, so the same data)")
    assert_same_store(tmp_path / "six.zarr", fresh)


def test_a_noisy_expert_records_its_own_targets_from_states_off_its_path(monkeypatch):
    """DART-style demos: the first target is the plain expert's (same reset, same plan); after
    it the states leave the plain path, each executed target is the recorded one plus about
    5 units of noise, and the recorded targets stay inside the arena; seeded by the episode."""
    plain = expert_module.run_expert_episode(expert_module.DEMO_SEED_BASE, record=True)
    executed = []
    step = expert_module.PushTEnv.step

    def watched(env, action):
        executed.append(np.asarray(action, dtype=np.float64))
        return step(env, action)
    monkeypatch.setattr(expert_module.PushTEnv, "step", watched)
    noisy = expert_module.run_expert_episode(expert_module.DEMO_SEED_BASE, record=True, recipe=NOISY)
    monkeypatch.setattr(expert_module.PushTEnv, "step", step)
    assert noisy.success
    offsets = np.stack(executed) - noisy.arrays["action"]  # (T, 2): what the noise moved
    assert np.all(np.abs(offsets).sum(axis=1) > 0) and 3.5 < offsets.std() < 6.5
    assert np.array_equal(noisy.arrays["action"][0], plain.arrays["action"][0])
    assert np.array_equal(noisy.arrays["state"][0], plain.arrays["state"][0])
    steps = min(len(plain.arrays["state"]), len(noisy.arrays["state"]))
    assert not np.allclose(noisy.arrays["state"][1:steps, :2], plain.arrays["state"][1:steps, :2], atol=0.5)
    again = expert_module.run_expert_episode(expert_module.DEMO_SEED_BASE, record=True, recipe=NOISY)
    assert np.array_equal(again.arrays["action"], noisy.arrays["action"])
    actions = noisy.arrays["action"]
    assert actions.min() >= 0.0 and actions.max() <= 512.0


def test_a_noisy_set_is_cached_under_its_own_name_and_never_mixed_with_a_plain_one(twelve, tmp_path):
    big, fresh = twelve
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / demo_dataset_path(12, SEED, big).name).symlink_to(demo_dataset_path(12, SEED, big))
    noisy = ensure_demo_dataset(3, seed=SEED, cache_dir=cache, recipe=NOISY)
    assert noisy == demo_dataset_path(3, SEED, cache, NOISY) and noisy.name.endswith("_noise5.zarr")
    assert cached_sizes(SEED, cache) == [12] and cached_sizes(SEED, cache, NOISY) == [3]
    plain_states = _arrays(demo_dataset_path(12, SEED, big))["data/state"]
    assert not np.array_equal(_arrays(noisy)["data/state"][:20], plain_states[:20])  # made, not copied
    with pytest.raises(DataError, match=r"data.expert_noise -1.0: .*0 or more"):
        ensure_demo_dataset(3, seed=SEED, cache_dir=cache, recipe=DemoRecipe(noise=-1.0))
    assert sorted(p.name for p in cache.iterdir() if p.suffix == ".zarr") == sorted(
        [demo_dataset_path(12, SEED, big).name, noisy.name])


def test_an_expert_asked_to_finish_pushes_on_after_success_and_the_plain_one_stops_there():
    """The plain expert's episode ends at the step that crosses the task's threshold; with
    finish=0.98 the same episode goes on (the same steps up to there) until the coverage reaches
    0.98 or FINISH_STEPS more steps pass, and it still counts as a success."""
    seed = expert_module.DEMO_SEED_BASE
    plain = expert_module.run_expert_episode(seed, record=True)
    finished = expert_module.run_expert_episode(seed, record=True, recipe=DemoRecipe(finish=0.98))
    assert plain.success and finished.success
    n = plain.steps
    assert finished.steps > n and np.array_equal(finished.arrays["action"][:n], plain.arrays["action"])
    assert finished.max_coverage >= 0.98 or finished.steps == n + expert_module.FINISH_STEPS
    assert DemoRecipe(finish=0.98).tag == "_finish0.98" and DemoRecipe(5.0, 0.98).tag == "_noise5_finish0.98"
    with pytest.raises(DataError, match=r"data.expert_finish 1.5: .*\(0, 1\]"):
        DemoRecipe(finish=1.5)
