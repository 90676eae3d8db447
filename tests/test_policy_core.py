"""ImfPolicy: loss and action chunks in world units, checkpoints with the normaliser,
warm-starting across masks, optimizer groups."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from imf.config import load_config
from imf.data.normalizer import MinMaxNormalizer
from imf.errors import CheckpointError, ConfigError
from imf.model import EMAModel
from imf.policy import ImfPolicy, load_weights_partial


def normalizer() -> MinMaxNormalizer:
    rng = np.random.default_rng(0)
    norm = MinMaxNormalizer()
    norm.fit("action", rng.uniform(20, 500, (200, 2)))
    norm.fit("agent_pos", rng.uniform(20, 500, (200, 2)))
    norm.set_identity_range("image", 0.0, 1.0)
    return norm


def make_policy(*overrides: str, seed: int = 0) -> ImfPolicy:
    torch.manual_seed(seed)
    cfg = load_config("smoke", ["policy.n_emb=32", "policy.n_layer=2", *overrides])
    return ImfPolicy(cfg, normalizer())


def batch(b: int = 3, t: int = 10, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"obs": {"image": torch.rand(b, t, 3, 96, 96, generator=g),
                    "agent_pos": 20 + 480 * torch.rand(b, t, 2, generator=g)},
            "action": 20 + 480 * torch.rand(b, 10, 2, generator=g)}


def obs(b: int = 2, seed: int = 1) -> dict:
    full = batch(b, t=2, seed=seed)["obs"]
    return {"image": full["image"], "agent_pos": full["agent_pos"]}


@pytest.mark.parametrize("objective", ["imf", "flow", "meanflow", "ddpm"])
def test_compute_loss_and_predict_action(objective):
    policy = make_policy(f"objective.name={objective}")
    loss, metrics = policy.compute_loss(batch())
    loss.backward()
    # metrics stay on the device (0-dim, detached): the loop reads them at its log points
    assert torch.isfinite(loss) and metrics["loss"].dim() == 0 and not metrics["loss"].requires_grad
    assert policy.encoder.proj.weight.grad.abs().sum() > 0
    policy.eval()
    steps = {"ddpm": 5}.get(objective)
    action = policy.predict_action(obs(), generator=torch.Generator().manual_seed(0), n_steps=steps)
    assert action.shape == (2, policy.n_action_steps, 2) and action.dtype == torch.float32
    assert torch.isfinite(action).all()


def test_predict_action_unnormalises_the_chunk_from_the_last_observation_step():
    policy = make_policy().eval()
    g = torch.Generator().manual_seed(0)
    o = obs()
    cond = policy.encode_obs(o, slice(-2, None))
    full = policy.objective.sample(policy.model, cond, generator=g)  # (B, H, 2) normalised
    action = policy.predict_action(o, generator=torch.Generator().manual_seed(0))
    expected = policy.normalizer.unnormalize("action", full)[:, 1:9]  # from n_obs_steps - 1
    torch.testing.assert_close(action, expected)
    assert policy(o).shape == action.shape  # policy(obs) is predict_action


def test_state_dict_round_trip_restores_normaliser_and_outputs():
    policy = make_policy(seed=1).eval()
    state = policy.state_dict()
    fresh = ImfPolicy(policy.cfg, MinMaxNormalizer()).eval()  # an empty normaliser
    fresh.load_state_dict(state)
    assert fresh.normalizer.state_dict() == policy.normalizer.state_dict()
    a = policy.predict_action(obs(), generator=torch.Generator().manual_seed(0))
    b = fresh.predict_action(obs(), generator=torch.Generator().manual_seed(0))
    assert torch.equal(a, b)
    path_state = torch.load(_save(state), weights_only=False)
    fresh.load_state_dict(path_state)


def _save(state):
    import io
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return buf


def test_causal_checkpoint_warm_starts_a_full_attention_policy_completely():
    causal = make_policy(seed=2).eval()
    full = make_policy("policy.mask=full", "policy.n_head=1", seed=3).eval()
    report = load_weights_partial(full, causal.state_dict())
    assert report.missing == [] and report.unexpected == [] and report.shape_mismatched == []
    assert len(report.loaded) == len(causal.state_dict())
    for name, value in causal.model.state_dict().items():
        assert torch.equal(full.model.state_dict()[name], value)
    # same weights, different mask: the outputs differ (masks are not parameters)
    o = obs()
    a = causal.predict_action(o, generator=torch.Generator().manual_seed(0))
    b = full.predict_action(o, generator=torch.Generator().manual_seed(0))
    assert not torch.allclose(a, b)


def test_partial_load_reports_shape_mismatch_and_keeps_new_modules_initialised():
    small = make_policy(seed=4)
    wide = make_policy("policy.n_emb=64", seed=5)
    before = wide.model.head.weight.clone()
    report = load_weights_partial(wide, small.state_dict())
    assert "model.head.weight" in report.shape_mismatched
    assert torch.equal(wide.model.head.weight, before)
    assert "encoder.trunk.0.weight" in report.loaded  # the encoder shapes match
    old = make_policy("objective.options.tangent=boundary", seed=6).eval()  # no v-head
    new = make_policy(seed=7).eval()  # the default tangent, v_head
    report = load_weights_partial(new, old.state_dict())
    assert report.missing == ["model.v_head.bias", "model.v_head.weight"]
    o = obs()
    assert torch.equal(old.predict_action(o, generator=torch.Generator().manual_seed(0)),
                       new.predict_action(o, generator=torch.Generator().manual_seed(0)))
    with pytest.raises(CheckpointError):
        load_weights_partial(new, ["not", "a", "state dict"])


def test_optimizer_groups_cover_every_parameter_with_the_configured_decay():
    policy = make_policy()
    cfg = policy.cfg.training
    groups = policy.optimizer_groups(cfg)
    ids = [id(p) for g in groups for p in g["params"]]
    assert len(ids) == len(set(ids)) == len(list(policy.parameters()))
    by_name = {g["name"]: g for g in groups}
    assert by_name["encoder"]["weight_decay"] == cfg.encoder_weight_decay
    assert by_name["transformer_decay"]["weight_decay"] == cfg.weight_decay
    assert by_name["transformer_no_decay"]["weight_decay"] == 0.0
    torch.optim.AdamW(groups, lr=1e-4, betas=tuple(cfg.betas))  # accepted as is


def test_the_trials_optimizer_is_fused_on_a_cpu_and_steps_as_plain_adamw_does():
    """make_optimizer: the policy's groups, the fused kernel on a CPU (none on a device without
    one), and the update of torch's one-tensor-at-a-time AdamW to rounding."""
    from imf.train.parts import make_optimizer
    fused_policy, plain_policy = make_policy(), make_policy()
    plain_policy.load_state_dict(fused_policy.state_dict())
    cfg = fused_policy.cfg.training
    fused = make_optimizer(fused_policy, cfg, torch.device("cpu"))
    assert fused.defaults["fused"] is True
    assert [g["name"] for g in fused.param_groups] == [g["name"] for g in fused_policy.optimizer_groups(cfg)]
    assert make_optimizer(make_policy(), cfg, torch.device("meta")).defaults["fused"] is None
    plain = torch.optim.AdamW(plain_policy.optimizer_groups(cfg), lr=cfg.lr, betas=tuple(cfg.betas), foreach=False)
    data = batch()
    for step in range(3):
        for policy, opt in ((fused_policy, fused), (plain_policy, plain)):
            torch.manual_seed(step)  # dropout draws from the global generator
            loss, _ = policy.compute_loss(data, generator=torch.Generator().manual_seed(step))
            opt.zero_grad()
            loss.backward()
            opt.step()
    moved = 0
    for (name, a), b in zip(fused_policy.named_parameters(), plain_policy.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
        moved += int(not torch.equal(a, make_policy().state_dict()[name]))
    assert moved > 0


def test_ema_of_a_policy_is_usable_for_inference_and_checkpoints():
    policy = make_policy()
    ema = EMAModel(policy)
    opt = torch.optim.AdamW(policy.optimizer_groups(policy.cfg.training), lr=1e-3)
    for _ in range(2):
        loss, _ = policy.compute_loss(batch())
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.step(policy)
    averaged = ema.averaged_model
    assert not averaged.training
    action = averaged.predict_action(obs(), generator=torch.Generator().manual_seed(0))
    assert action.shape == (2, 8, 2)
    restored = EMAModel(make_policy(seed=9))
    restored.load_state_dict(ema.state_dict())
    assert torch.equal(restored.averaged_model.predict_action(obs(), generator=torch.Generator().manual_seed(0)), action)


@pytest.mark.parametrize("override, key", [
    ("policy.n_obs_steps=12", "policy.horizon"),  # more observation steps than the horizon
    ("objective.sample_steps=0", "objective.sample_steps"),
    ("policy.p_drop_attn=1.5", "policy.p_drop_attn"),
    ("policy.crop_shape=0", "policy.crop_shape"),
    ("eval.n_test=0", "eval.n_test"),
    ("eval.max_steps=0", "eval.max_steps"),
    ("eval.n_train=-1", "eval.n_train"),
    ("training.lr=-1", "training.lr"),
    ("training.weight_decay=-0.1", "training.weight_decay"),
    ("training.betas=[0.9]", "training.betas"),
    ("training.betas=[0.9,1.5]", "training.betas"),
])
def test_bad_policy_config_values_are_config_errors_naming_the_key(override, key):
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        load_config("smoke", [override])


@pytest.mark.parametrize("overrides, pattern", [
    (["objective.name=ddpm", "objective.options.steps=0"], r"'objective.options.steps': must be >= 1, got 0"),
    (["objective.name=ddpm", "objective.options.beta_schedule=cosine"],
     r"'objective.options.beta_schedule': got 'cosine', allowed: squaredcos_cap_v2, linear"),
    (["objective.options.adaptive_c=-0.01"], r"'objective.options.adaptive_c': must be > 0"),
    (["objective.options.tangent=jvp"], r"'objective.options.tangent': got 'jvp', allowed: boundary, v_head"),
    (["objective.options.equal_time_ratio=1.5"], r"'objective.options.equal_time_ratio': must be in \[0, 1\]"),
    (["objective.options.tangnet=v_head"],
     r"unknown config key 'objective.options.tangnet' for objective 'imf' \(did you mean 'objective.options.tangent'"),
    (["objective.name=flow", "objective.options.tangent=v_head"],
     r"unknown config key 'objective.options.tangent' for objective 'flow'.*its options: time_mu, time_sigma"),
    (["objective.name=ddpm", "objective.ddpm_steps=0"], r"'objective.options.steps': must be >= 1"),  # old spelling
])
def test_bad_objective_options_are_config_errors_naming_the_key(overrides, pattern):
    with pytest.raises(ConfigError, match=pattern):
        make_policy(*overrides)


def test_objective_options_default_per_objective_and_old_spellings_still_read():
    assert make_policy("objective.name=ddpm").objective.opts.steps == 100
    assert make_policy("objective.tangent=v_head").objective.uses_v_head  # the pre-options spelling
    cfg = load_config("smoke", ["objective.name=flow", "objective.time_mu=0.3"])
    assert cfg.objective.options == {"time_mu": 0.3}
