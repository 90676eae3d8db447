"""Image encoder (ResNet-18/GroupNorm, small option, crops) and the weight EMA."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from imf.config import PolicyConfig
from imf.model import EMAModel, ObsEncoder
from imf.model.encoder import SpatialSoftmax, crop_images


@pytest.mark.parametrize("encoder", ["resnet18", "small"])
def test_encoder_feature_per_step_is_image_features_plus_agent_pos(encoder):
    torch.manual_seed(0)
    enc = ObsEncoder(PolicyConfig(encoder=encoder)).eval()
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in enc.modules())
    image, pos = torch.rand(2, 3, 3, 96, 96), torch.randn(2, 3, 2)
    with torch.no_grad():
        out = enc(image, pos)
    assert out.shape == (2, 3, 66) and enc.feature_dim == 66
    assert torch.equal(out[..., 64:], pos)  # agent_pos is passed through, last
    with torch.no_grad():  # steps are encoded independently by the shared trunk
        single = enc(image[:, 1:2], pos[:, 1:2])
    torch.testing.assert_close(single[:, 0], out[:, 1], atol=1e-5, rtol=1e-5)


def test_resnet18_trunk_has_the_reference_size():
    enc = ObsEncoder(PolicyConfig(encoder="resnet18"))
    n_trunk = sum(p.numel() for p in enc.trunk.parameters())
    assert 11.0e6 < n_trunk < 11.3e6  # ResNet-18 without fc: ~11.2M weights
    groups = [m.num_groups for m in enc.modules() if isinstance(m, nn.GroupNorm)]
    assert groups and set(groups) == {4, 8, 16, 32}  # C // 16 for C in 64..512


def test_crops_random_in_training_centre_in_eval():
    x = torch.arange(2 * 96 * 96, dtype=torch.float32).view(2, 1, 96, 96)
    centre = crop_images(x, 84, random=False)
    assert torch.equal(centre, x[:, :, 6:90, 6:90])
    torch.manual_seed(0)
    crops = crop_images(x.repeat(16, 1, 1, 1), 84, random=True)
    assert crops.shape == (32, 1, 84, 84)
    corners = crops[:, 0, 0, 0] - x.repeat(16, 1, 1, 1)[:, 0, 0, 0]
    assert len(set(corners.tolist())) > 3  # different offsets per image
    for crop, img in zip(crops, x.repeat(16, 1, 1, 1)):  # each crop is a true window
        top, left = divmod(int(crop[0, 0, 0] - img[0, 0, 0]), 96)
        assert torch.equal(crop, img[:, top:top + 84, left:left + 84])


def test_random_crops_take_their_offsets_from_the_seeded_generator():
    """Rows' offsets, then columns': a seeded run crops the same windows on any version."""
    x = torch.rand(5, 3, 96, 96)
    torch.manual_seed(7)
    crops = crop_images(x, 84, random=True)
    torch.manual_seed(7)
    top, left = torch.randint(0, 13, (5,)), torch.randint(0, 13, (5,))
    want = torch.stack([x[i, :, t:t + 84, l:l + 84] for i, (t, l) in enumerate(zip(top.tolist(), left.tolist()))])
    assert torch.equal(crops, want)


def test_spatial_softmax_finds_the_hot_pixel():
    pool = SpatialSoftmax(1, 1)
    nn.init.ones_(pool.keypoints.weight)
    nn.init.zeros_(pool.keypoints.bias)
    x = torch.zeros(1, 1, 5, 5)
    x[0, 0, 4, 0] = 50.0  # bottom-left
    torch.testing.assert_close(pool(x), torch.tensor([[-1.0, 1.0]]), atol=1e-4, rtol=0)


def test_ema_follows_the_decay_schedule_and_round_trips():
    model = nn.Linear(3, 1)
    ema = EMAModel(model, power=0.75, max_value=0.9999)
    assert ema.get_decay(0) == 0.0 and ema.get_decay(1) == 0.0
    assert ema.get_decay(11) == pytest.approx(1 - 11 ** -0.75)
    assert ema.get_decay(10 ** 9) == 0.9999
    with torch.no_grad():
        model.weight.fill_(1.0)
    ema.step(model)  # decay 0: a copy
    assert torch.equal(ema.averaged_model.weight, model.weight)
    with torch.no_grad():
        model.weight.fill_(3.0)
    ema.step(model)  # still decay 0 (step 1)
    ema.step(model)
    d = ema.get_decay(2)
    assert ema.decay == pytest.approx(d)
    torch.testing.assert_close(ema.averaged_model.weight, torch.full((1, 3), 3.0))
    with torch.no_grad():
        model.weight.fill_(5.0)
    ema.step(model)
    expected = ema.decay * 3.0 + (1 - ema.decay) * 5.0
    torch.testing.assert_close(ema.averaged_model.weight, torch.full((1, 3), expected))
    other = EMAModel(nn.Linear(3, 1))
    other.load_state_dict(ema.state_dict())
    assert other.optimization_step == ema.optimization_step == 4
    assert torch.equal(other.averaged_model.weight, ema.averaged_model.weight)
    assert not any(p.requires_grad for p in other.averaged_model.parameters())


def test_small_encoder_width_sets_its_first_two_convolutions_and_runs_channels_last():
    from imf.config import load_config
    from imf.errors import ConfigError
    enc = ObsEncoder(PolicyConfig(encoder="small", encoder_width=16))
    convs = [m for m in enc.trunk if isinstance(m, nn.Conv2d)]
    assert [c.out_channels for c in convs] == [16, 32, 64]
    assert convs[0].weight.is_contiguous(memory_format=torch.channels_last)
    out = enc(torch.rand(2, 2, 3, 96, 96) * 2 - 1, torch.zeros(2, 2, 2))
    assert out.shape == (2, 2, enc.feature_dim) and torch.isfinite(out).all()
    with pytest.raises(ConfigError, match="policy.encoder_width"):
        load_config("smoke", ["policy.encoder_width=0"])
