"""Mixed precision: the trial's autocast choice, and every objective's train step and
predict_action under bf16 autocast, run on the CPU through the trial's own helper."""
from __future__ import annotations

import pytest
import torch
from test_policy_core import batch, make_policy, obs

from imf.train.parts import autocast_for, use_bf16

OBJECTIVES = ["imf", "imf/v_head", "meanflow", "flow", "ddpm"]
CPU = torch.device("cpu")


def policy_for(objective: str):
    name, _, tangent = objective.partition("/")
    return make_policy(f"objective.name={name}", *([f"objective.tangent={tangent}"] if tangent else []))


def test_the_trial_autocasts_on_cuda_only_and_when_the_config_asks():
    assert not use_bf16(CPU, True)  # bf16 on CPU is slower here; the helper can still force it
    assert not use_bf16(torch.device("cuda"), False)
    assert use_bf16(torch.device("cuda"), True) == (torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    with autocast_for(CPU, True):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    with autocast_for(CPU, False):
        assert not torch.is_autocast_enabled("cpu")


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_train_step_under_bf16_autocast(objective):
    policy = policy_for(objective)
    with autocast_for(CPU, True):
        cond = policy.encode_obs(batch()["obs"], slice(0, 2))
        loss, metrics = policy.compute_loss(batch())
    assert cond.dtype == torch.bfloat16  # the encoder really ran in bf16
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and all(torch.isfinite(torch.as_tensor(v)) for v in metrics.values())
    grads = [p.grad for p in policy.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert policy.encoder.proj.weight.grad.abs().sum() > 0 and policy.model.head.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_predict_action_under_bf16_autocast_is_float32_and_near_the_float32_chunk(objective):
    policy = policy_for(objective).eval()
    steps = {"ddpm": 5}.get(objective)
    full = policy.predict_action(obs(), generator=torch.Generator().manual_seed(0), n_steps=steps)
    with autocast_for(CPU, True):
        half = policy.predict_action(obs(), generator=torch.Generator().manual_seed(0), n_steps=steps)
    assert half.dtype == torch.float32 and half.shape == full.shape
    # Same noise draws, float32 state, only the network in bf16: within 2 world units of 512
    # (0.2-0.4 seen; a bf16 state alone rounds actions near 500 to steps of 2).
    assert (half - full).abs().max() < 2.0
