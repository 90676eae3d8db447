"""imf/upgrade.py: an older file brought to today's version, one named step at a time."""
from __future__ import annotations

import pytest

from imf.upgrade import FileKind, Step



def _rename(data):
    data["b"] = data.pop("a")
    return data


KIND = FileKind("thing.json", (Step(2, "a renamed", _rename), Step(3, "c added", lambda d: {**d, "c": 0})))


def test_each_step_after_the_files_own_version_runs_in_order():
    assert KIND.current == 3
    assert KIND.upgrade({"version": 1, "a": 5}) == {"version": 3, "b": 5, "c": 0}
    assert KIND.upgrade({"version": 2, "b": 5}) == {"version": 3, "b": 5, "c": 0}
    assert KIND.upgrade({"version": 3, "b": 5, "c": 1}) == {"version": 3, "b": 5, "c": 1}


@pytest.mark.parametrize("data", [{"version": 4}, {}, {"version": "2"}, {"version": True}])
def test_a_version_this_imf_does_not_read_is_named(data):
    with pytest.raises(ValueError, match="this imf reads 1 to 3"):
        KIND.upgrade(data)


def test_a_prefixed_version_and_a_kind_that_began_unversioned():
    ckpt = FileKind("checkpoint", (Step(2, "x", lambda d: d),), key="format", prefix="imf-checkpoint-")
    assert ckpt.upgrade({"format": "imf-checkpoint-1"})["format"] == "imf-checkpoint-2"
    with pytest.raises(ValueError, match="format 'other'; this imf reads imf-checkpoint-1 to imf-checkpoint-2"):
        ckpt.upgrade({"format": "other"})
    summary = FileKind("summary.json", (Step(1, "versioned", lambda d: d),))
    assert summary.upgrade({"id": "t"}) == {"id": "t", "version": 1}


def test_a_format_1_checkpoint_is_read_as_today_and_an_unknown_format_is_named(tmp_path):
    import torch

    from imf.errors import CheckpointError
    from imf.train.checkpoint import FORMAT, load_checkpoint

    path = tmp_path / "old.pt"
    weights = {"w": torch.ones(1), "_extra_state": {"normalizer": {}}}  # an older writer's copy
    torch.save({"format": "imf-checkpoint-1", "config": {"policy": {"n_emb": 64}}, "policy": weights,
                "ema": weights, "normalizer": {}}, path)  # from before keypoint observations
    state = load_checkpoint(path)
    assert FORMAT == "imf-checkpoint-2" and state["format"] == FORMAT
    assert state["config"]["policy"] == {"n_emb": 64, "obs_type": "image"}
    assert list(state["policy"]) == list(state["ema"]) == ["w"]
    torch.save({"format": "imf-checkpoint-9", "config": {}, "policy": {}, "normalizer": {}}, path)
    with pytest.raises(CheckpointError, match="format 'imf-checkpoint-9'; this imf reads imf-checkpoint-1 to imf-checkpoint-2"):
        load_checkpoint(path)
