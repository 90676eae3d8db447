"""A loader's batch is fetched in one gather (``ReplayWindows.__getitems__``): the same items,
padding and order as reading its windows one by one, for both observations."""
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, default_collate

from imf.data.dataset import PushTImageDataset
from imf.data.keypoint_dataset import PushTKeypointDataset
from imf.data.replay_buffer import ReplayBuffer
from imf.data.sampler import WindowSampler


def _buffer(lengths, seed=0):
    rng = np.random.default_rng(seed)
    n = int(sum(lengths))
    arrays = {"img": rng.integers(0, 256, size=(n, 96, 96, 3), dtype=np.uint8),
              "state": rng.uniform(0, 512, size=(n, 5)).astype(np.float32),
              "keypoint": rng.uniform(0, 512, size=(n, 9, 2)).astype(np.float32),
              "action": rng.uniform(0, 512, size=(n, 2)).astype(np.float32)}
    return ReplayBuffer(arrays, np.cumsum(lengths).astype(np.int64))


def _frames_by_hand(sampler, index):
    """The reference rule, written out: frame = start + clip(offset + k, 0, length - 1)."""
    start, length, offset = (int(v) for v in sampler.windows[index])
    return [start + min(max(offset + k, 0), length - 1) for k in range(sampler.horizon)]


def test_batch_frame_indices_are_each_windows_frames_padded_at_both_ends():
    sampler = WindowSampler(np.array([5, 12, 14]), horizon=4, pad_before=1, pad_after=3)
    every = np.arange(len(sampler))
    rows = sampler.batch_frame_indices(every)
    assert rows.shape == (len(sampler), 4)
    for i in every:
        assert rows[i].tolist() == _frames_by_hand(sampler, i) == sampler.frame_indices(i).tolist()
    assert sampler.batch_frame_indices(np.array([], dtype=np.int64)).shape == (0, 4)


@pytest.mark.parametrize("kind", [PushTImageDataset, PushTKeypointDataset])
def test_a_batch_fetch_gives_the_items_read_one_by_one(kind):
    ds = kind(_buffer([12, 15, 20, 9]), horizon=10, n_obs_steps=2, n_action_steps=8, val_ratio=0.25,
              max_train_episodes=None)
    picks = [len(ds) - 1, 0, 7, 7, 3]  # padded windows at both ends, a repeat, any order
    batch = ds.__getitems__(picks)
    assert len(batch) == len(picks)
    for got, i in zip(batch, picks):
        one = ds[i]
        assert got.keys() == one.keys() and got["obs"].keys() == one["obs"].keys()
        for key in one["obs"]:
            assert got["obs"][key].dtype == one["obs"][key].dtype
            assert torch.equal(got["obs"][key], one["obs"][key])
        assert torch.equal(got["action"], one["action"])


def test_the_items_are_the_stored_arrays_for_keypoints():
    buf = _buffer([12, 15])
    ds = PushTKeypointDataset(buf, horizon=10, n_obs_steps=2, n_action_steps=8, val_ratio=0.0,
                              max_train_episodes=None)
    item = ds[4]
    frames = _frames_by_hand(ds.sampler, 4)
    keypoints = buf.arrays["keypoint"][frames].reshape(10, 18)
    np.testing.assert_array_equal(item["obs"]["keypoints"].numpy()[:, :18], keypoints)
    np.testing.assert_array_equal(item["obs"]["agent_pos"].numpy(), buf.arrays["state"][frames, :2])
    np.testing.assert_array_equal(item["action"].numpy(), buf.arrays["action"][frames])


def test_a_loader_batch_equals_the_collated_items_in_the_samplers_order():
    ds = PushTKeypointDataset(_buffer([12, 15, 20, 9]), horizon=10, n_obs_steps=2, n_action_steps=8,
                              val_ratio=0.0, max_train_episodes=None)
    order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(3)).tolist()
    loader = DataLoader(ds, batch_size=8, sampler=order)
    for k, batch in enumerate(loader):
        expected = default_collate([ds[i] for i in order[8 * k: 8 * k + 8]])
        assert torch.equal(batch["action"], expected["action"])
        assert torch.equal(batch["obs"]["keypoints"], expected["obs"]["keypoints"])
        assert torch.equal(batch["obs"]["agent_pos"], expected["obs"]["agent_pos"])
