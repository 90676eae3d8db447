"""Every objective: loss, gradients, sampling shape and determinism; the iMF construction."""
from __future__ import annotations

import importlib

import pytest
import torch

from imf import registry
from imf.config import ObjectiveConfig, PolicyConfig
from imf.model import ImfTransformer
from imf.registry.options import resolve
from imf.objectives.base import MeanFlowOptions, expand, sample_t_r
from imf.objectives.ddpm import DdpmObjective, make_betas

CASES = [("imf", "boundary"), ("imf", "v_head"), ("imf", "shared"), ("meanflow", "boundary"), ("flow", "boundary"),
         ("ddpm", "boundary")]


def make_objective(name: str, **options):
    """The objective as the policy builds it: its Options checked from a config mapping."""
    cls = registry.get("imf.objectives", name)
    return cls(ObjectiveConfig(name=name), resolve(cls, options, "objective.options", name))


def setup(name: str, tangent: str = "boundary", seed: int = 0, **obj_kw):
    torch.manual_seed(seed)
    obj = make_objective(name, **({"tangent": tangent} if name == "imf" else {}), **obj_kw)
    cfg = PolicyConfig(n_emb=32, n_layer=2, n_head=2, p_drop_attn=0.0, horizon=5, n_obs_steps=2,
                       n_action_steps=3)
    return obj, ImfTransformer(cfg, 4, v_head=obj.uses_v_head)


def data(b: int = 6, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, 5, 2, generator=g) * 2 - 1, torch.randn(b, 2, 4, generator=g)


@pytest.mark.parametrize("name,tangent", CASES)
def test_loss_is_finite_and_trains_weights_and_cond(name, tangent):
    obj, model = setup(name, tangent)
    x, cond = data()
    cond.requires_grad_()
    loss, metrics = obj.loss(model, x, cond, generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert torch.isfinite(loss) and metrics["loss"] == pytest.approx(loss.item())
    assert cond.grad is not None and cond.grad.abs().sum() > 0  # the encoder gets gradients
    assert model.head.weight.grad.abs().sum() > 0
    again, _ = obj.loss(model, x, cond, generator=torch.Generator().manual_seed(0))
    assert again.item() == pytest.approx(loss.item())  # seeded: the same draw


@pytest.mark.parametrize("name,tangent", CASES)
def test_sample_shape_and_determinism_under_a_seed(name, tangent):
    obj, model = setup(name, tangent)
    model.eval()
    _, cond = data(b=3)
    steps = 2 if name != "ddpm" else 10
    with torch.no_grad():
        a = obj.sample(model, cond, n_steps=steps, generator=torch.Generator().manual_seed(7))
        b = obj.sample(model, cond, n_steps=steps, generator=torch.Generator().manual_seed(7))
        c = obj.sample(model, cond, n_steps=steps, generator=torch.Generator().manual_seed(8))
        default = obj.sample(model, cond, generator=torch.Generator().manual_seed(7))
    assert a.shape == default.shape == (3, 5, 2)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.isfinite(default).all()


@pytest.mark.parametrize("ratio", [0.0, 0.25, 0.5, 1.0])
def test_time_sampling_follows_the_spec(ratio):
    opts = MeanFlowOptions(equal_time_ratio=ratio)
    t, r, _ = sample_t_r(10000, opts, torch.zeros(1), torch.Generator().manual_seed(0))
    equal = t == r
    assert equal.float().mean().item() == pytest.approx(ratio, abs=0.01)
    assert (r[~equal] < t[~equal]).all() and ((t > 0) & (t < 1)).all()
    if ratio < 1:
        logit = torch.logit(torch.cat([t[~equal], r[~equal]]))  # the two draws, pooled
        assert logit.mean().item() == pytest.approx(-0.4, abs=0.06)
        assert logit.std().item() == pytest.approx(1.0, abs=0.06)


def test_imf_loss_is_the_compound_velocity_with_the_models_own_tangent(monkeypatch):
    """Recompute the iMF loss by hand (boundary tangent) from the draws the loss made."""
    obj, model = setup("imf", adaptive_p=0.0)  # p = 0: the plain summed squared error
    x, cond = data(b=8)
    draws = _spy_on_draws(monkeypatch, "imf")
    loss, _ = obj.loss(model, x, cond, generator=torch.Generator().manual_seed(3))
    z, v, t, r, _ = draws[0]
    with torch.no_grad():
        tangent = model(z, t, torch.zeros_like(t), cond)  # u(z_t, t, t)
    ones = torch.ones_like(t)
    u, dudt = torch.func.jvp(lambda a, b, c: model(a, b, c, cond), (z, t, t - r), (tangent, ones, ones))
    compound = u + expand(t - r) * dudt
    expected = (compound - v).pow(2).sum(dim=(1, 2)).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert (t == r).any() and dudt[t > r].abs().sum() > 0  # both kinds of row were drawn


def test_ddpm_cosine_schedule():
    betas = make_betas("squaredcos_cap_v2", 100)
    assert betas.shape == (100,) and (betas > 0).all() and (betas <= 0.999).all()
    abar = torch.cumprod(1 - betas, 0)
    assert abar[0] > 0.999 and abar[-1] < 1e-3 and (abar[1:] < abar[:-1]).all()
    obj = DdpmObjective(ObjectiveConfig(name="ddpm"))  # no options given: the defaults
    assert obj.n_train == 100


def test_bad_step_count_is_a_config_error():
    from imf.errors import ConfigError
    obj, model = setup("flow")
    with pytest.raises(ConfigError, match="sample_steps"):
        obj.sample(model, data()[1], n_steps=0)


@pytest.mark.parametrize("name,tangent", CASES)
def test_loss_runs_under_bf16_autocast(name, tangent):
    """The trainer may autocast to bf16; the JVP itself stays in float32."""
    obj, model = setup(name, tangent)
    x, cond = data()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = obj.loss(model, x, cond, generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert torch.isfinite(loss) and model.head.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("n_steps, expected", [(3, 3), (10, 10), (250, 100)])
def test_ddpm_sampling_runs_exactly_the_requested_steps(n_steps, expected):
    obj, model = setup("ddpm")
    model.eval()
    calls = []
    model.register_forward_hook(lambda *args: calls.append(1))
    with torch.no_grad():
        out = obj.sample(model, data(b=2)[1], n_steps=n_steps, generator=torch.Generator().manual_seed(0))
    assert len(calls) == expected and torch.isfinite(out).all()  # capped at the training steps


def _spy_on_draws(monkeypatch, objective: str) -> list[tuple]:
    """Record the (z, v, t, r, n_eq) an objective's loss draws: a reference computation on
    the same draws, whatever order the loss makes them in."""
    module = importlib.import_module(f"imf.objectives.{objective}")
    real, seen = module.draw_mean_flow_batch, []

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]
    monkeypatch.setattr(module, "draw_mean_flow_batch", spy)
    return seen


def test_meanflow_loss_regresses_u_on_the_stop_gradient_target_along_e_minus_x(monkeypatch):
    obj, model = setup("meanflow", adaptive_p=0.0)
    x, cond = data(b=8)
    draws = _spy_on_draws(monkeypatch, "meanflow")
    loss, _ = obj.loss(model, x, cond, generator=torch.Generator().manual_seed(3))
    z, v, t, r, _ = draws[0]
    ones = torch.ones_like(t)
    u, dudt = torch.func.jvp(lambda a, b, c: model(a, b, c, cond), (z, t, t - r), (v, ones, ones))
    expected = (u - (v - expand(t - r) * dudt)).pow(2).sum(dim=(1, 2)).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert dudt[t > r].abs().sum() > 0


def test_imf_v_head_loss_uses_the_heads_velocity_as_tangent_and_trains_the_head(monkeypatch):
    obj, model = setup("imf", "v_head", adaptive_p=0.0)
    x, cond = data(b=8)
    draws = _spy_on_draws(monkeypatch, "imf")
    loss, metrics = obj.loss(model, x, cond, generator=torch.Generator().manual_seed(3))
    z, v, t, r, _ = draws[0]
    ones = torch.ones_like(t)
    with torch.no_grad():
        u, v_pred = model.forward_with_v(z, t, t - r, cond)
        _, dudt = torch.func.jvp(lambda a, b, c: model(a, b, c, cond), (z, t, t - r), (v_pred, ones, ones))
    compound = u + expand(t - r) * dudt
    v_mse = (v_pred - v).pow(2).mean()
    expected = (compound - v).pow(2).sum(dim=(1, 2)).mean() + v_mse
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert metrics["v_head_mse"] == pytest.approx(v_mse.item(), rel=1e-5)
