"""The policy transformer: masks through the model, the JVP, fused vs plain attention, init."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as fwAD

from imf import registry
from imf.attention import AttentionMasks
from imf.config import PolicyConfig
from imf.errors import ConfigError
from imf.model import ImfTransformer
from imf.objectives.base import jvp

H, N_OBS, F = 6, 3, 5


def make_model(mask: str = "causal", n_head: int = 2, seed: int = 0, **kw) -> ImfTransformer:
    torch.manual_seed(seed)
    cfg = PolicyConfig(mask=mask, n_emb=32, n_layer=2, n_head=n_head, p_drop_attn=0.0,
                       horizon=H, n_obs_steps=N_OBS, n_action_steps=2, **kw)
    return ImfTransformer(cfg, F).eval()


def inputs(b: int = 2, seed: int = 1, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(b, H, 2, generator=g, dtype=dtype)
    t = torch.rand(b, generator=g, dtype=dtype)
    return z, t, t * 0.5, torch.randn(b, N_OBS, F, generator=g, dtype=dtype)


def changed_positions(model, z, t, h, cond, z2, cond2) -> list[int]:
    """Action positions whose output moves when (z, cond) becomes (z2, cond2)."""
    with torch.no_grad():
        diff = (model(z, t, h, cond) - model(z2, t, h, cond2)).abs().amax(dim=(0, 2))  # (H,)
    return [i for i in range(H) if diff[i] > 1e-6]


@pytest.mark.parametrize("n_cond_layers", [0, 1])
def test_causal_mask_hides_later_actions_and_observations(n_cond_layers):
    model = make_model("causal", n_cond_layers=n_cond_layers)
    z, t, h, cond = inputs()
    for j in range(H):
        z2 = z.clone()
        z2[:, j] += 1.0
        assert min(changed_positions(model, z, t, h, cond, z2, cond)) == j
    for k in range(N_OBS):
        cond2 = cond.clone()
        cond2[:, k] += 1.0
        assert min(changed_positions(model, z, t, h, cond, z, cond2)) == k


def test_full_mask_lets_every_position_see_everything():
    model = make_model("full", n_head=1)
    z, t, h, cond = inputs()
    z2 = z.clone()
    z2[:, H - 1] += 1.0
    assert changed_positions(model, z, t, h, cond, z2, cond) == list(range(H))
    cond2 = cond.clone()
    cond2[:, N_OBS - 1] += 1.0
    assert changed_positions(model, z, t, h, cond, z, cond2) == list(range(H))


@pytest.mark.parametrize("mask", ["causal", "full"])
def test_fused_and_plain_attention_agree(mask):
    model = make_model(mask)
    z, t, h, cond = inputs()
    with torch.no_grad():
        fused = model(z, t, h, cond)
        with fwAD.dual_level():  # forward AD active: attention takes its plain-matmul path
            plain = fwAD.unpack_dual(model(fwAD.make_dual(z, torch.zeros_like(z)), t, h, cond)).primal
    torch.testing.assert_close(fused, plain, atol=1e-5, rtol=1e-5)


def test_forward_ad_detection_follows_torch():
    # The one use of torch's private ``_current_level``: fails loudly if a torch release moves it.
    from imf.model.layers import forward_ad_active
    assert isinstance(fwAD._current_level, int)
    seen = []
    torch.func.jvp(lambda x: seen.append(forward_ad_active()) or x * 2, (torch.ones(2),), (torch.ones(2),))
    with fwAD.dual_level():
        seen.append(forward_ad_active())
    seen.append(forward_ad_active())
    assert seen == [True, True, False]


def central_difference(fn, primals, tangents, eps=1e-6):
    plus = [p + eps * tg for p, tg in zip(primals, tangents)]
    minus = [p - eps * tg for p, tg in zip(primals, tangents)]
    with torch.no_grad():
        return (fn(*plus) - fn(*minus)) / (2 * eps)


@pytest.mark.parametrize("n_cond_layers", [0, 1])
def test_jvp_matches_central_difference(n_cond_layers):
    model = make_model("causal", n_cond_layers=n_cond_layers).double()
    z, t, h, cond = inputs(dtype=torch.float64)
    tangents = (torch.randn_like(z), torch.ones_like(t), torch.ones_like(h))

    def fn(z_, t_, h_):
        return model(z_, t_, h_, cond)

    fd = central_difference(fn, (z, t, h), tangents)
    _, func_tangent = torch.func.jvp(fn, (z, t, h), tangents)
    with fwAD.dual_level():
        out = fn(*(fwAD.make_dual(p, tg) for p, tg in zip((z, t, h), tangents)))
        dual_tangent = fwAD.unpack_dual(out).tangent
    assert fd.abs().max() > 1e-3  # the check is not vacuous
    torch.testing.assert_close(func_tangent, fd, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(dual_tangent, fd, atol=1e-6, rtol=1e-5)


def test_jvp_helper_float32_and_gradients_match_plain_forward():
    model = make_model("causal")
    z, t, h, cond = inputs()
    cond = cond.requires_grad_()
    tangents = (torch.randn_like(z), torch.ones_like(t), torch.ones_like(h))
    u, dudt = jvp(model, (z, t, h), tangents, cond)
    model64 = copy.deepcopy(model).double()
    fd = central_difference(lambda *a: model64(*a, cond.detach().double()),
                            [x.double() for x in (z, t, h)], [x.double() for x in tangents])
    torch.testing.assert_close(dudt.double(), fd, atol=2e-4, rtol=2e-3)
    # The primal keeps its graph: gradients equal those of an ordinary forward.
    params = [cond] + list(model.parameters())
    g_jvp = torch.autograd.grad((u ** 3).sum(), params)
    g_ref = torch.autograd.grad((model(z, t, h, cond) ** 3).sum(), params)
    for a, b in zip(g_jvp, g_ref):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)


def test_reference_init_and_masks_are_not_weights():
    model = make_model("causal")
    assert abs(model.input_emb.weight.std().item() - 0.02) < 0.01
    assert model.head.bias.abs().max() == 0
    assert model.ln_f.weight.eq(1).all() and model.ln_f.bias.eq(0).all()
    assert abs(model.pos_emb.std().item() - 0.02) < 0.01
    keys = model.state_dict().keys()
    assert not any("mask" in k for k in keys)
    full = make_model("full", n_head=1)
    full.load_state_dict(model.state_dict())  # strict: every tensor matches
    assert full.self_mask is None and model.self_mask is not None


def test_optim_groups_split_decay_and_cover_every_parameter_once():
    model = make_model("causal")
    groups = model.optim_groups(weight_decay=1e-3)
    decay, no_decay = groups[0]["params"], groups[1]["params"]
    ids = [id(p) for p in decay + no_decay]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
    assert all(p.dim() == 2 for p in decay)  # Linear weights only
    assert any(p is model.pos_emb for p in no_decay) and any(p is model.cond_pos_emb for p in no_decay)
    assert any(p is model.ln_f.weight for p in no_decay) and any(p is model.head.bias for p in no_decay)
    assert groups[0]["weight_decay"] == 1e-3 and groups[1]["weight_decay"] == 0.0


def test_v_head_does_not_change_u_of_an_old_checkpoint():
    old = make_model("causal", seed=3)
    torch.manual_seed(4)
    cfg = PolicyConfig(mask="causal", n_emb=32, n_layer=2, n_head=2, p_drop_attn=0.0,
                       horizon=H, n_obs_steps=N_OBS, n_action_steps=2)
    new = ImfTransformer(cfg, F, v_head=True).eval()
    result = new.load_state_dict(old.state_dict(), strict=False)
    assert sorted(result.missing_keys) == ["v_head.bias", "v_head.weight"]
    z, t, h, cond = inputs()
    with torch.no_grad():
        u_new, v_new = new.forward_with_v(z, t, h, cond)
        assert torch.equal(new(z, t, h, cond), old(z, t, h, cond))
    assert torch.equal(u_new, old(z, t, h, cond).detach())
    assert v_new.shape == u_new.shape


@pytest.mark.parametrize("masks, pattern", [
    (AttentionMasks(np.ones((H, H - 1), bool), None), r"self_attn has shape \(6, 5\), expected \(6, 6\)"),
    (AttentionMasks(None, np.ones((H, 2), bool)), r"cross_attn has shape \(6, 2\), expected \(6, 5\)"),
    (AttentionMasks(np.tri(H, k=-1, dtype=bool), None), r"self_attn row 0 attends to nothing"),
    ((np.ones((H, H), bool), None), r"returned tuple, expected imf.attention.AttentionMasks"),
])
def test_a_bad_mask_plugin_is_a_config_error_naming_policy_mask(monkeypatch, masks, pattern):
    monkeypatch.setattr(registry, "get", lambda group, name: lambda *counts: masks)
    with pytest.raises(ConfigError, match=r"config key 'policy.mask': plugin 'causal'.*" + pattern):
        make_model("causal")


@pytest.mark.parametrize("mask,n_cond_layers", [("causal", 0), ("full", 1), ("causal", 1)])
def test_written_out_jvp_matches_central_difference(mask, n_cond_layers):
    # model.jvp (imf/model/tangent.py) against a float64 central difference, every layer kind
    model = make_model(mask, n_cond_layers=n_cond_layers).double()
    z, t, h, cond = inputs(dtype=torch.float64)
    tangents = (torch.randn_like(z), torch.rand_like(t), torch.rand_like(h))
    u, du = model.jvp(z, t, h, cond, *tangents)
    fd = central_difference(lambda *a: model(*a, cond), (z, t, h), tangents)
    assert fd.abs().max() > 1e-3
    torch.testing.assert_close(du, fd, atol=1e-6, rtol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(u, model(z, t, h, cond), atol=1e-10, rtol=1e-10)
    assert u.requires_grad and not du.requires_grad  # du is used stop-gradiented


def test_written_out_jvp_uses_one_dropout_mask_for_value_and_tangent():
    # With dropout on, the tangent must be the derivative of the SAME dropped-out function:
    # replaying the RNG gives the same masks, so a central difference under it must agree.
    model = make_model("causal").double()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.3
        if hasattr(m, "p_drop"):
            m.p_drop = 0.3
    model.train()
    z, t, h, cond = inputs(dtype=torch.float64)
    tangents = (torch.randn_like(z), torch.ones_like(t), torch.ones_like(h))

    def with_seed(fn):
        torch.manual_seed(5)
        return fn()

    _, du = with_seed(lambda: model.jvp(z, t, h, cond, *tangents))
    eps = 1e-6
    plus = with_seed(lambda: model.jvp(*(p + eps * tg for p, tg in zip((z, t, h), tangents)), cond, *tangents)[0])
    minus = with_seed(lambda: model.jvp(*(p - eps * tg for p, tg in zip((z, t, h), tangents)), cond, *tangents)[0])
    torch.testing.assert_close(du, ((plus - minus) / (2 * eps)).detach(), atol=1e-6, rtol=1e-5)
    other = with_seed(lambda: model.jvp(z, t, h, cond, *tangents)[0])
    torch.manual_seed(6)
    assert not torch.allclose(other, model.jvp(z, t, h, cond, *tangents)[0])  # dropout is on


@pytest.mark.parametrize("mask,n_cond_layers", [("causal", 0), ("full", 1)])
def test_v_head_jvp_is_the_derivative_along_its_own_velocity_from_one_pass(mask, n_cond_layers):
    # model.jvp_v_head: u and v from the value pass, du from its tape along (sg(v), dt, dh)
    torch.manual_seed(0)
    cfg = PolicyConfig(mask=mask, n_emb=32, n_layer=2, n_head=2 if mask == "causal" else 1, p_drop_attn=0.0,
                       horizon=H, n_obs_steps=N_OBS, n_action_steps=2, n_cond_layers=n_cond_layers)
    model = ImfTransformer(cfg, F, v_head=True).double().eval()
    z, t, h, cond = inputs(dtype=torch.float64)
    dt, dh = torch.rand_like(t), torch.rand_like(h)
    u, v, du = model.jvp_v_head(z, t, h, cond, dt, dh)
    u_ref, v_ref = model.forward_with_v(z, t, h, cond)
    torch.testing.assert_close(u, u_ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(v, v_ref, atol=1e-10, rtol=1e-10)
    fd = central_difference(lambda *a: model(*a, cond), (z, t, h), (v.detach(), dt, dh))
    assert fd.abs().max() > 1e-3
    torch.testing.assert_close(du, fd, atol=1e-6, rtol=1e-5)
    assert u.requires_grad and v.requires_grad and not du.requires_grad
    params = list(model.parameters())
    g_new = torch.autograd.grad((u ** 3).sum() + (v ** 2).sum(), params)
    g_ref = torch.autograd.grad((u_ref ** 3).sum() + (v_ref ** 2).sum(), params)
    for a, b in zip(g_new, g_ref):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-8)
