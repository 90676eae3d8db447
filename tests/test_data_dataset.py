"""Windows, splits and normaliser of PushTImageDataset, against the reference's rules."""
import numpy as np
import pytest
import torch

from imf.data.dataset import PushTImageDataset
from imf.data.normalizer import MinMaxNormalizer
from imf.data.replay_buffer import ReplayBuffer
from imf.data.sampler import WindowSampler, downsample_mask, validation_mask
from imf.errors import DataError


def _buffer(lengths, seed=0):
    rng = np.random.default_rng(seed)
    n = int(sum(lengths))
    arrays = {"img": rng.integers(0, 256, size=(n, 96, 96, 3), dtype=np.uint8),
              "state": np.arange(n * 5, dtype=np.float32).reshape(n, 5),
              "action": np.arange(n * 2, dtype=np.float32).reshape(n, 2)}
    return ReplayBuffer(arrays, np.cumsum(lengths).astype(np.int64))


def test_window_padding_follows_the_reference():
    sampler = WindowSampler(np.array([5, 12]), horizon=4, pad_before=1, pad_after=3)
    # starts run from -pad_before to L - horizon + pad_after in each episode
    assert len(sampler) == (5 - 4 + 3 + 1 + 1) + (7 - 4 + 3 + 1 + 1)
    np.testing.assert_array_equal(sampler.frame_indices(0), [0, 0, 1, 2])
    np.testing.assert_array_equal(sampler.frame_indices(5), [4, 4, 4, 4])
    np.testing.assert_array_equal(sampler.frame_indices(6), [5, 5, 6, 7])
    np.testing.assert_array_equal(sampler.frame_indices(13), [11, 11, 11, 11])


def test_pads_are_clamped_to_horizon_minus_one():
    sampler = WindowSampler(np.array([3]), horizon=2, pad_before=5, pad_after=5)
    assert len(sampler) == 3 - 2 + 1 + 1 + 1


def test_validation_split_size_and_seed():
    for n_episodes, ratio, expected in [(206, 0.02, 4), (10, 0.02, 1), (2, 0.5, 1), (1, 0.02, 0)]:
        mask = validation_mask(n_episodes, ratio, seed=42)
        assert mask.sum() == expected
    picked = np.nonzero(validation_mask(206, 0.02, 42))[0]
    expected = np.sort(np.random.default_rng(42).choice(206, size=4, replace=False))
    np.testing.assert_array_equal(picked, expected)


def test_downsample_keeps_a_seeded_subset():
    mask = np.ones(200, dtype=bool)
    mask[:3] = False
    small = downsample_mask(mask, 90, seed=42)
    assert small.sum() == 90 and not small[:3].any()
    np.testing.assert_array_equal(small, downsample_mask(mask, 90, seed=42))
    assert downsample_mask(mask, None, 42) is mask


def test_items_shapes_dtypes_and_content():
    buf = _buffer([12, 15, 20, 9])
    ds = PushTImageDataset(buf, horizon=10, n_obs_steps=2, n_action_steps=8, val_ratio=0.25,
                           max_train_episodes=None)
    item = ds[0]
    assert item["obs"]["image"].shape == (2, 3, 96, 96) and item["obs"]["image"].dtype == torch.uint8
    assert item["obs"]["agent_pos"].shape == (10, 2) and item["action"].shape == (10, 2)
    frames = ds.sampler.frame_indices(0)  # the stored bytes, channels first: scaled on the device
    np.testing.assert_array_equal(item["obs"]["image"].numpy(), np.moveaxis(buf.arrays["img"][frames[:2]], -1, 1))
    np.testing.assert_array_equal(item["action"].numpy(), buf.arrays["action"][frames])
    np.testing.assert_array_equal(item["obs"]["agent_pos"].numpy(), buf.arrays["state"][frames, :2])


def test_train_and_validation_windows_cover_disjoint_episodes():
    buf = _buffer([12, 15, 20, 9, 14])
    ds = PushTImageDataset(buf, horizon=10, n_obs_steps=2, n_action_steps=8, val_ratio=0.2,
                           max_train_episodes=3)
    val = ds.get_validation_dataset()
    assert ds.train_mask.sum() == 3 and (~ds.train_mask).sum() == 2
    episode_of = np.repeat(np.arange(5), buf.episode_lengths)
    train_eps = {int(episode_of[ds.sampler.frame_indices(i)[0]]) for i in range(len(ds))}
    val_eps = {int(episode_of[val.sampler.frame_indices(i)[0]]) for i in range(len(val))}
    assert train_eps == set(np.nonzero(ds.train_mask)[0]) and not train_eps & val_eps
    direct = PushTImageDataset(buf, 10, 2, 8, val_ratio=0.2, max_train_episodes=3, val=True)
    assert len(direct) == len(val)


def test_normalizer_fits_train_episodes_and_round_trips():
    buf = _buffer([12, 15, 20, 9, 14])
    ds = PushTImageDataset(buf, horizon=10, n_obs_steps=2, n_action_steps=8, val_ratio=0.2,
                           max_train_episodes=None)
    norm = ds.get_normalizer()
    starts = buf.episode_ends - buf.episode_lengths
    rows = np.concatenate([np.arange(starts[i], buf.episode_ends[i]) for i in np.nonzero(ds.train_mask)[0]])
    train_actions = buf.arrays["action"][rows]
    scaled = norm.normalize("action", train_actions)
    assert scaled.min() == pytest.approx(-1.0, abs=1e-5) and scaled.max() == pytest.approx(1.0, abs=1e-5)
    assert norm.normalize("image", np.array([0.0, 1.0])) == pytest.approx([-1.0, 1.0])
    again = MinMaxNormalizer.from_state_dict(norm.state_dict())
    np.testing.assert_allclose(again.unnormalize("agent_pos", again.normalize("agent_pos", buf.arrays["state"][:, :2])),
                               buf.arrays["state"][:, :2], rtol=1e-5)


def test_normalizer_on_tensors_reuses_its_parameters_until_refitted():
    norm = MinMaxNormalizer()
    norm.fit("action", np.array([[0.0, 10.0], [4.0, 30.0]]))
    x = torch.tensor([[2.0, 20.0]], dtype=torch.float64)
    np.testing.assert_allclose(norm.normalize("action", x).numpy(), norm.normalize("action", x.numpy()))
    assert norm.normalize("action", x).dtype == torch.float64
    assert norm._params("action", x)[0] is norm._params("action", x)[0]  # made once per device and dtype
    norm.fit("action", np.array([[0.0, 0.0], [8.0, 40.0]]))
    np.testing.assert_allclose(norm.normalize("action", x).numpy(), [[-0.5, 0.0]], atol=1e-6)


def test_normalizer_bad_state_is_a_data_error():
    with pytest.raises(DataError, match="malformed"):
        MinMaxNormalizer.from_state_dict({"action": {"scale": ["a"], "offset": [0.0]}})
    with pytest.raises(DataError, match="malformed"):
        MinMaxNormalizer.from_state_dict({"action": {"scale": [1.0]}})


@pytest.mark.parametrize("max_train", [0, -3])
def test_no_training_episodes_is_a_data_error(max_train):
    with pytest.raises(DataError, match="max_train_episodes"):
        PushTImageDataset(_buffer([12, 15]), horizon=10, n_obs_steps=2, n_action_steps=8,
                          max_train_episodes=max_train)
