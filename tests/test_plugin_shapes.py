"""Masks and objectives run at the shapes of every installed preset (`imf plugins --check`), and
a sweep's masks at its own config (`imf sweep --dry-run`), before any trial: a mask whose arrays
are not the shapes the transformer expects, or an objective that cannot compute a loss at a
preset's horizon, is named in one line with the preset."""
from __future__ import annotations


import numpy as np
import pytest
from imf_process import run_in_process as imf
from plugin_fakes import fake_distribution

from imf import registry
from imf.config import list_presets, load_config
from imf.errors import ConfigError
from imf.registry.masks import N_TIME_TOKENS, mask_shapes, resolve_masks

SHAPES = '''
import numpy as np
import torch

from imf.attention import AttentionMasks


def narrowed(n_action, n_time, n_obs):  # one self-attention column short
    return AttentionMasks(np.ones((n_action, n_action - 1), bool), None)


class Fixed16:  # an objective that assumes a horizon of 16
    name = "fixed16"
    uses_v_head = False

    def __init__(self, cfg, options=None):
        self.cfg = cfg

    def loss(self, model, actions, cond, generator=None):
        x = actions.reshape(actions.shape[0], 16, 2)
        t = torch.full((x.shape[0],), 0.5)
        return (model(x, t, t, cond) - x).pow(2).mean(), {}

    def sample(self, model, cond, n_steps=None, generator=None):
        return torch.zeros(cond.shape[0], 16, 2)
'''


@pytest.fixture
def fake_shapes(tmp_path, monkeypatch):
    src = tmp_path / "src"
    fake_distribution(src, "imf-fake-shapes", "imf_fake_shapes", SHAPES, {
        "imf.masks": {"narrowed": "imf_fake_shapes:narrowed"},
        "imf.objectives": {"fixed16": "imf_fake_shapes:Fixed16"}})
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.setenv("IMF_PLUGINS", "imf-fake-shapes")
    yield src
    registry.clear_cache()




def test_the_shapes_a_mask_must_have_are_the_transformers():
    assert N_TIME_TOKENS == 2  # t and h = t - r
    assert mask_shapes(16, 2) == {"self_attn": (16, 16), "cross_attn": (16, 4)}
    masks = resolve_masks(load_config("smoke").policy)
    assert masks.self_attn.shape == (10, 10) and masks.cross_attn.shape == (10, 4)


def test_a_wrong_shape_is_a_config_error_naming_plugin_and_shapes(fake_shapes):
    policy = load_config("smoke", ["policy.mask=narrowed"]).policy
    with pytest.raises(ConfigError) as err:
        resolve_masks(policy)
    assert str(err.value) == ("config key 'policy.mask': plugin 'narrowed': self_attn has shape (10, 9), "
                              "expected (10, 10) (horizon x horizon)")


def test_plugins_check_runs_the_built_ins_at_every_preset(monkeypatch, capsys):
    code, out, err = imf(monkeypatch, capsys, "plugins", "--check")
    assert code == 0, err
    masks, objectives = len(registry.names("imf.masks")), len(registry.names("imf.objectives"))
    assert f"{masks} masks and {objectives} objectives run at the shapes of {len(list_presets())} presets" in out


def test_plugins_check_names_a_wrong_shape_mask_and_the_preset(fake_shapes, monkeypatch, capsys):
    code, out, err = imf(monkeypatch, capsys, "plugins", "--check")
    assert code == 2 and err.count("\n") == 1 and err.startswith("imf: error: ")
    first = sorted(list_presets())[0]
    horizon = load_config(first).policy.horizon
    assert (f"mask 'narrowed' in imf.masks (from imf-fake-shapes) at preset {first}: self_attn has shape "
            f"({horizon}, {horizon - 1}), expected ({horizon}, {horizon})") in err
    assert "also at " in err  # every preset fails, the others are listed
    assert "mask 'causal'" not in err and "mask 'full'" not in err


def test_plugins_check_names_an_objective_that_fails_at_a_presets_horizon(fake_shapes, monkeypatch, capsys):
    code, _, err = imf(monkeypatch, capsys, "plugins", "--check")
    assert code == 2
    line = next(part for part in err.split("; objective") if "'fixed16'" in part)
    horizons = {name: load_config(name).policy.horizon for name in sorted(list_presets())}
    failing = [name for name, horizon in horizons.items() if horizon != 16]
    assert failing and len(failing) < len(horizons)
    assert f"in imf.objectives (from imf-fake-shapes) at preset {failing[0]}: RuntimeError: " in line
    for name in set(horizons) - set(failing):  # horizon 16: the loss computes there
        assert f"preset {name}:" not in line and f" {name}," not in line and not line.rstrip().endswith(f" {name})")
    assert "objective 'imf'" not in err


def test_sweep_dry_run_refuses_a_wrong_shape_mask_in_one_line(fake_shapes, tmp_path, monkeypatch, capsys):
    code, out, err = imf(monkeypatch, capsys, "sweep", "smoke", "--grid", "32x1", "--queue", "local:cpu",
                         "--name", "dr", "--out", str(tmp_path), "--mask", "narrowed", "--dry-run")
    assert code == 2 and out == ""
    assert err == ("imf: error: config key 'policy.mask': plugin 'narrowed': self_attn has shape (10, 9), "
                   "expected (10, 10) (horizon x horizon); at trial dr-narrowed-e32-l1-s42 of smoke, "
                   "before any trial starts\n")
    assert not (tmp_path / "dr").exists()


def test_sweep_dry_run_checks_each_trials_own_horizon(fake_shapes, tmp_path):
    from imf.errors import SweepError
    from imf.sweep.launch import SweepRequest, dry_run

    def short_at_16(n_action, n_time, n_obs):
        size = n_action - 1 if n_action == 16 else n_action
        return type("Masks", (), {"self_attn": np.ones((n_action, size), bool), "cross_attn": None})()
    real = registry.get
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "get", lambda group, name: short_at_16 if name == "narrowed" else real(group, name))
        req = SweepRequest(config="smoke", grids=["32x1", "policy.horizon=10,16"], queues=["local:cpu"],
                           name="dr", out=tmp_path, mask="narrowed")
        with pytest.raises(SweepError, match=r"self_attn has shape \(16, 15\), expected \(16, 16\).*"
                                             r"at trial dr-narrowed-e32-l1-s42-horizon16"):
            dry_run(req)
