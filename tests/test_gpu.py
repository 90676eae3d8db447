"""The CUDA path: bf16 training steps, CUDA actions against CPU ones, a short trial on CUDA.

Marked ``gpu``; they skip without CUDA. benchmarks/gpu_check.sh runs them on a lent GPU.
"""
from __future__ import annotations

import pytest
import torch
from test_policy_core import batch, make_policy, obs
from test_train_trial import run, tiny

import imf.objectives.base as objectives_base
import imf.objectives.ddpm as objectives_ddpm
from imf.train.parts import autocast_for, use_bf16

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]
CUDA = torch.device("cuda")


def to_cuda(tree):
    if isinstance(tree, dict):
        return {k: to_cuda(v) for k, v in tree.items()}
    return tree.to(CUDA)


def cpu_noise(monkeypatch, seed: int) -> None:
    """Draw the samplers' noise on the CPU and move it, so CPU and CUDA see the same draws."""
    gen = torch.Generator().manual_seed(seed)

    def randn(shape, like, generator, dtype=None):
        return torch.randn(shape, generator=gen, dtype=dtype or like.dtype).to(like.device)
    monkeypatch.setattr(objectives_base, "randn", randn)
    monkeypatch.setattr(objectives_ddpm, "randn", randn)


@pytest.mark.parametrize("objective", ["imf", "meanflow", "flow", "ddpm"])
def test_train_step_under_cuda_bf16_autocast(objective):
    assert use_bf16(CUDA, True), "the trial would not autocast on this GPU"
    policy = make_policy(f"objective.name={objective}").to(CUDA)
    with autocast_for(CUDA, use_bf16(CUDA, True)):
        loss, _ = policy.compute_loss(to_cuda(batch(b=8)))
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in policy.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert policy.encoder.proj.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("objective,steps", [("imf", None), ("flow", 4), ("ddpm", 10)])
def test_predict_action_on_cuda_matches_cpu(objective, steps, monkeypatch):
    policy = make_policy(f"objective.name={objective}", "policy.encoder=resnet18").eval()
    o = obs(b=3)
    cpu_noise(monkeypatch, 0)
    on_cpu = policy.predict_action(o, n_steps=steps)
    policy.to(CUDA)
    cpu_noise(monkeypatch, 0)
    on_cuda = policy.predict_action(to_cuda(o), n_steps=steps)
    cpu_noise(monkeypatch, 0)
    with autocast_for(CUDA, True):
        on_cuda_bf16 = policy.predict_action(to_cuda(o), n_steps=steps)
    assert on_cuda.device.type == "cuda" and on_cuda_bf16.dtype == torch.float32
    # World units (a 512-unit workspace); TF32 convolutions are allowed by default on CUDA.
    torch.testing.assert_close(on_cuda.cpu(), on_cpu, atol=2.0, rtol=0)
    torch.testing.assert_close(on_cuda_bf16.cpu(), on_cpu, atol=4.0, rtol=0)  # CPU bf16: < 0.7


def test_a_short_trial_runs_on_cuda_with_bf16(demo_cache, tmp_path):  # noqa: F811
    summary = run(tiny(demo_cache, "training.num_epochs=1", "training.device=cuda",
                       "training.bf16=true"), tmp_path / "gpu-trial")
    assert summary["status"] == "completed" and summary["global_step"] == 4
