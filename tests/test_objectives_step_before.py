"""The iMF step after the two-pass JVP gives the loss and gradients of the step before it
(benchmarks/speed/imf_step_before.py, the reference benchmarks/speed/imf_step.py times), in float64."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from imf.config import ObjectiveConfig, PolicyConfig
from imf.model import ImfTransformer
from imf.objectives.imf import ImfObjective, ImfOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "speed"))
from imf_step_before import before  # noqa: E402


def loss_and_grads(objective, model, x, cond):
    cond = cond.clone().requires_grad_()
    loss, metrics = objective.loss(model, x, cond, generator=torch.Generator().manual_seed(3))
    params = [cond] + [p for p in model.parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return loss, metrics, grads


@pytest.mark.parametrize("tangent,mask,n_cond_layers,ratio", [
    ("boundary", "causal", 0, 0.5), ("boundary", "full", 1, 0.25), ("boundary", "causal", 1, 0.75),
    ("v_head", "causal", 0, 0.5), ("v_head", "full", 1, 0.25)])
def test_loss_and_gradients_equal_the_step_before(tangent, mask, n_cond_layers, ratio):
    torch.manual_seed(0)
    cfg = PolicyConfig(mask=mask, n_emb=32, n_layer=2, n_head=1 if mask == "full" else 2, p_drop_attn=0.0,
                       horizon=6, n_obs_steps=2, n_action_steps=3, n_cond_layers=n_cond_layers)
    model = ImfTransformer(cfg, 4, v_head=tangent == "v_head").double().train()
    new = ImfObjective(ObjectiveConfig(name="imf"), ImfOptions(tangent=tangent, equal_time_ratio=ratio))
    g = torch.Generator().manual_seed(1)
    x = torch.rand(8, 6, 2, generator=g, dtype=torch.float64) * 2 - 1
    cond = torch.randn(8, 2, 4, generator=g, dtype=torch.float64)
    loss_new, metrics_new, grads_new = loss_and_grads(new, model, x, cond)
    loss_old, metrics_old, grads_old = loss_and_grads(before(new), model, x, cond)
    assert metrics_new["mse"] > 1e-3  # not a vacuous comparison
    torch.testing.assert_close(loss_new, loss_old, atol=1e-12, rtol=1e-10)
    for key in metrics_old:
        torch.testing.assert_close(metrics_new[key], metrics_old[key], atol=1e-12, rtol=1e-10)
    assert sum(g is not None for g in grads_new) > 10
    for a, b in zip(grads_new, grads_old):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-9)


def test_with_dropout_the_boundary_step_draws_the_same_masks_as_before():
    # The value pass draws its dropout masks in the order and shapes the interleaved pass did,
    # so under one seed the training step is the same function as before, dropout included.
    torch.manual_seed(0)
    cfg = PolicyConfig(mask="causal", n_emb=32, n_layer=2, n_head=2, p_drop_attn=0.2, p_drop_emb=0.1,
                       horizon=6, n_obs_steps=2, n_action_steps=3)
    model = ImfTransformer(cfg, 4).double().train()
    new = ImfObjective(ObjectiveConfig(name="imf"), ImfOptions(tangent="boundary"))
    g = torch.Generator().manual_seed(1)
    x = torch.rand(8, 6, 2, generator=g, dtype=torch.float64) * 2 - 1
    cond = torch.randn(8, 2, 4, generator=g, dtype=torch.float64)
    torch.manual_seed(7)
    loss_new, _, grads_new = loss_and_grads(new, model, x, cond)
    torch.manual_seed(7)
    loss_old, _, grads_old = loss_and_grads(before(new), model, x, cond)
    torch.testing.assert_close(loss_new, loss_old, atol=1e-12, rtol=1e-10)
    for a, b in zip(grads_new, grads_old):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-9)
