"""Warm start through the real checkpoint path: what loads, and outputs that carry over."""
from __future__ import annotations

import json

import pytest
import torch

from imf.config import load_config
from imf.data.normalizer import MinMaxNormalizer
from imf.policy import ImfPolicy, load_weights_partial
from imf.train.checkpoint import load_checkpoint, save_checkpoint, warm_start_line

torch.set_num_threads(1)


def _normalizer() -> MinMaxNormalizer:
    norm = MinMaxNormalizer()
    norm.fit("action", torch.tensor([[0.0, 0.0], [512.0, 512.0]]).numpy())
    norm.fit("agent_pos", torch.tensor([[0.0, 0.0], [512.0, 512.0]]).numpy())
    norm.set_identity_range("image", 0.0, 1.0)
    return norm


def _obs(batch: int = 3) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    return {"image": torch.rand(batch, 2, 3, 96, 96, generator=g),
            "agent_pos": torch.rand(batch, 2, 2, generator=g) * 512}


def _actions(policy: ImfPolicy) -> torch.Tensor:
    policy.eval()
    with torch.no_grad():
        return policy.predict_action(_obs(), generator=torch.Generator().manual_seed(3))


def test_new_optional_head_keeps_old_outputs_exactly(tmp_path):
    old_cfg = load_config("smoke", ["objective.tangent=boundary"])
    torch.manual_seed(0)
    old = ImfPolicy(old_cfg, _normalizer())
    path = tmp_path / "old.pt"
    save_checkpoint(path, {"config": old_cfg.to_dict(), "normalizer": old.normalizer.state_dict(),
                           "policy": old.state_dict()})
    new_cfg = load_config("smoke", ["objective.tangent=v_head"])
    torch.manual_seed(1)  # different init everywhere, so only loaded tensors can match
    new = ImfPolicy(new_cfg, _normalizer())
    report = load_weights_partial(new, load_checkpoint(path)["policy"])
    assert report.unexpected == [] and report.shape_mismatched == []
    assert report.missing and all(name.startswith("model.v_head") for name in report.missing)
    line = warm_start_line(report, path)
    assert f"{len(report.missing)} missing, 0 unexpected, 0 shape-mismatched" in line
    torch.testing.assert_close(_actions(new), _actions(old), rtol=0, atol=0)


def test_full_attention_from_causal_loads_every_tensor(tmp_path):
    causal_cfg = load_config("smoke")
    torch.manual_seed(0)
    causal = ImfPolicy(causal_cfg, _normalizer())
    full = ImfPolicy(load_config("smoke", ["policy.mask=full", "policy.n_head=1"]), _normalizer())
    report = load_weights_partial(full, causal.state_dict())
    assert (report.missing, report.unexpected, report.shape_mismatched) == ([], [], [])
    # Same weights, another mask: the outputs now differ, as full attention sees more.
    assert not torch.equal(_actions(full), _actions(causal))


def _checkpoint(tmp_path, preset: str, *overrides: str):
    from imf.train.checkpoint import load_checkpoint as load
    cfg = load_config(preset, list(overrides))
    torch.manual_seed(0)
    policy = ImfPolicy(cfg, _normalizer())
    path = tmp_path / f"{preset}.pt"
    save_checkpoint(path, {"config": cfg.to_dict(), "normalizer": policy.normalizer.state_dict(),
                           "policy": policy.state_dict()})
    return path, load(path)


def test_a_checkpoint_whose_shapes_differ_is_refused_in_one_line(tmp_path):
    from imf.errors import CheckpointError
    from imf.train.parts import check_warm_start
    path, ckpt = _checkpoint(tmp_path, "pusht_image_cpu")
    with pytest.raises(CheckpointError) as refused:
        check_warm_start(load_config("smoke"), ckpt, path)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"--init-from {path}: ")
    assert "tensors differ in shape (" in message and " vs " in message
    # the config difference: the first four policy settings that differ, in the config's order
    theirs, mine = load_config("pusht_image_cpu").policy, load_config("smoke").policy
    changed = [f"policy.{f} {getattr(theirs, f)} vs {getattr(mine, f)}" for f in theirs.__dataclass_fields__
               if getattr(theirs, f) != getattr(mine, f)]
    assert len(changed) > 4 and f"the checkpoint has {', '.join(changed[:4])} ...;" in message
    assert "set training.init_partial=true to load the" in message


def test_init_partial_loads_what_matches_and_missing_tensors_stay_allowed(tmp_path):
    from imf.train.parts import check_warm_start
    path, ckpt = _checkpoint(tmp_path, "pusht_image_cpu")
    check_warm_start(load_config("smoke", ["training.init_partial=true"]), ckpt, path)  # no error
    path, ckpt = _checkpoint(tmp_path, "smoke", "objective.tangent=boundary")
    check_warm_start(load_config("smoke", ["objective.tangent=v_head"]), ckpt, path)  # a new head: missing
    check_warm_start(load_config("smoke", ["policy.mask=full", "policy.n_head=1"]), ckpt, path)
    path, ckpt = _checkpoint(tmp_path, "smoke")  # the default tangent: a v-head
    check_warm_start(load_config("smoke", ["objective.options.tangent=boundary"]), ckpt, path)  # unused: unexpected


@pytest.mark.slow
def test_a_trial_from_a_checkpoint_of_another_size_is_refused_then_runs_partial(demo_cache, tmp_path):
    from test_train_trial import TINY
    from imf_process import run_imf
    # another size in every layer, the same observation space as smoke's (two steps)
    path, _ = _checkpoint(tmp_path, "pusht_image_cpu", "policy.n_obs_steps=2")
    args = ["trial", "smoke", *TINY, f"data.cache_dir={demo_cache}", "training.num_epochs=1",
            "--store", "none", "--init-from", str(path)]
    refused = run_imf(*args, "--out", str(tmp_path / "refused"), cwd=tmp_path)
    assert refused.returncode == 2 and not (tmp_path / "refused").exists()
    line, = refused.stderr.strip().splitlines()
    assert line.startswith(f"imf: error: --init-from {path}: 67 of 76 tensors differ in shape")
    partial = run_imf(*args, "training.init_partial=true", "--out", str(tmp_path / "partial"), cwd=tmp_path)
    assert partial.returncode == 0, partial.stderr
    assert (f"partial warm start (training.init_partial) from {path}: 9 tensors loaded, 0 missing, "
            "0 unexpected, 67 shape-mismatched") in partial.stdout
    summary = json.loads((tmp_path / "partial" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["warm_started"] is True
