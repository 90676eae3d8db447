"""The knobs the image ablations turn: the resolution the encoder sees, the LR schedule after
the warm-up, and checkpoints kept every N epochs (the samples-to-threshold curve reads them)."""
from __future__ import annotations

import json

import pytest
import torch

from imf.config import load_config
from imf.errors import ConfigError
from imf.model.encoder import ObsEncoder
from imf.train.checkpoint import load_checkpoint
from imf.train.trial import TrialOptions, run_trial

TINY = ["training.max_train_steps=3", "training.batch_size=8", "eval.n_test=2", "eval.n_train=0",
        "eval.max_steps=16", "eval.n_workers=1", "data.demo_episodes=4", "logging.trackers=none",
        "training.val_probe_windows=16", "training.rollout_every=2"]


def test_the_encoder_sees_encoder_resolution_pixels_a_side():
    cfg = load_config("smoke", ["policy.encoder_resolution=48"]).policy
    encoder = ObsEncoder(cfg).eval()
    seen = []
    encoder.trunk.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[-2:]))
    feature = encoder(torch.zeros(2, 2, 3, 96, 96), torch.zeros(2, 2, 2))  # (B, T, 3, S, S)
    assert tuple(seen[0]) == (48, 48) and feature.shape == (2, 2, cfg.image_feature_dim + 2)
    plain = ObsEncoder(load_config("smoke").policy).eval()
    plain.trunk.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[-2:]))
    plain(torch.zeros(1, 2, 3, 96, 96), torch.zeros(1, 2, 2))
    assert tuple(seen[1]) == (cfg.crop_shape, cfg.crop_shape)  # None: the crop, not resized


@pytest.mark.parametrize("override, says", [
    ("policy.encoder_resolution=4", "'policy.encoder_resolution': must be >= 8 pixels or null, got 4"),
    ("training.lr_schedule=linear", "'training.lr_schedule': got 'linear', allowed: cosine, constant"),
    ("training.snapshot_every=-1", "'training.snapshot_every': must be >= 0, got -1"),
])
def test_bad_knob_values_name_the_key_and_what_is_allowed(override, says):
    with pytest.raises(ConfigError) as err:
        load_config("smoke", [override])
    assert says in str(err.value)


def test_snapshot_every_keeps_a_checkpoint_per_n_epochs(tmp_path, demo_cache):
    cfg = load_config("smoke", TINY + [f"data.cache_dir={demo_cache}", "training.num_epochs=4",
                                       "training.snapshot_every=2", "training.checkpoint_every=3"])
    run_trial(cfg, TrialOptions(trial_id="snap", run_dir=tmp_path / "snap", stores=["none"]))
    snapshots = sorted((tmp_path / "snap" / "checkpoints" / "snapshots").iterdir())
    # epochs are 0-based in names and logs: every second epoch is 1 and 3
    assert [p.name for p in snapshots] == ["epoch=0001.pt", "epoch=0003.pt"]
    steps = [load_checkpoint(p)["global_step"] for p in snapshots]
    assert steps == [6, 12]  # 3 steps an epoch
    logged = [json.loads(line)["epoch"] for line in (tmp_path / "snap" / "logs.json.txt").read_text().splitlines()]
    assert logged == [0, 1, 2, 3]


def test_no_snapshots_by_default(tmp_path, demo_cache):
    cfg = load_config("smoke", TINY + [f"data.cache_dir={demo_cache}", "training.num_epochs=2"])
    run_trial(cfg, TrialOptions(trial_id="plain", run_dir=tmp_path / "plain", stores=["none"]))
    assert not (tmp_path / "plain" / "checkpoints" / "snapshots").exists()
