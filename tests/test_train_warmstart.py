"""Warm start through the real checkpoint path: what loads, and outputs that carry over."""
from __future__ import annotations

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
