"""The example third-party package in examples/imf_window_mask, found by entry point."""
import os
import shutil
import subprocess
import site
import venv

import numpy as np
import pytest

from imf import registry
from imf.config import load_config
from imf.errors import ConfigError
from imf.model import ImfTransformer
from imf.registry.options import fill_options
from plugin_fakes import WINDOW_PLUGIN_DIR, fake_install


def _fake_install_window(tmp_path, monkeypatch):
    root = fake_install(tmp_path / "site", WINDOW_PLUGIN_DIR / "imf_window_mask", "imf-window-mask",
                        {"imf.masks": {"window": "imf_window_mask:window"}})
    monkeypatch.syspath_prepend(str(root))
    return root


def test_window_mask_resolves_and_is_banded(tmp_path, monkeypatch):
    _fake_install_window(tmp_path, monkeypatch)
    window = registry.get("imf.masks", "window")
    masks = window(4, 2, 3, window.Options(width=2))
    expected_self = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(masks.self_attn, expected_self)
    np.testing.assert_array_equal(masks.cross_attn[:, :2], True)
    np.testing.assert_array_equal(masks.cross_attn[3, 2:], [False, False, True])
    assert "window" in [i.name for i in registry.discover("imf.masks")]


def test_window_width_comes_from_the_config_and_is_recorded(tmp_path, monkeypatch):
    _fake_install_window(tmp_path, monkeypatch)
    cfg = load_config("smoke", ["policy.mask=window", "policy.mask_options.width=2"])
    fill_options(cfg)
    assert cfg.policy.mask_options == {"width": 2}
    model = ImfTransformer(cfg.policy, cond_dim=8)
    assert model.self_mask[5].tolist() == [False] * 4 + [True, True] + [False] * (model.horizon - 6)
    assert "mask_options:\n    width: 2" in cfg.to_yaml()  # config.yaml keeps it
    default = load_config("smoke", ["policy.mask=window"])
    fill_options(default)
    assert default.policy.mask_options == {"width": 4}


@pytest.mark.parametrize("override, pattern", [
    ("policy.mask_options.widht=2", r"unknown config key 'policy.mask_options.widht' for mask 'window' "
                                    r"\(did you mean 'policy.mask_options.width'\?\); its options: width"),
    ("policy.mask_options.width=0", r"config key 'policy.mask_options.width': must be >= 1, got 0"),
    ("policy.mask_options.width=two", r"config key 'policy.mask_options.width': expected an integer, got 'two'"),
])
def test_bad_window_options_name_the_key(tmp_path, monkeypatch, override, pattern):
    _fake_install_window(tmp_path, monkeypatch)
    cfg = load_config("smoke", ["policy.mask=window", override])
    with pytest.raises(ConfigError, match=pattern):
        fill_options(cfg)


def test_a_mask_without_options_refuses_them():
    cfg = load_config("smoke", ["policy.mask_options.width=2"])
    with pytest.raises(ConfigError, match="'policy.mask_options': mask 'causal' takes no options, got width"):
        fill_options(cfg)


@pytest.mark.slow
def test_pip_install_example_plugin_into_temp_venv(tmp_path):
    """Really pip-install the example into a fresh venv that sees imf's environment."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    inner_site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                capture_output=True, text=True, check=True).stdout.strip()
    # The temp venv reuses the outer environment (imf, numpy, typer) through a .pth hook.
    outer = [p for p in site.getsitepackages() if os.path.isdir(p)]
    hook = "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in outer)
    with open(os.path.join(inner_site, "_imf_outer.pth"), "w") as fh:
        fh.write(hook + "\n")
    source = tmp_path / "imf_window_mask"  # a clean copy, to see what the build leaves in it
    shutil.copytree(WINDOW_PLUGIN_DIR, source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    before = sorted(p.name for p in source.iterdir())
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(source)],
                   check=True, capture_output=True, text=True)
    assert sorted(p.name for p in source.iterdir()) == before  # no build/, no *.egg-info
    out = subprocess.run([str(py), "-m", "imf", "plugins"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.strip().startswith("window"))
    assert "imf-window-mask 0.1.0" in line and "BROKEN" not in line
    # The plain imf environment does not have it.
    assert "window" not in registry.names("imf.masks")


def test_window_mask_drives_a_real_policy(tmp_path, monkeypatch):
    """A third-party mask plugs into the model by name, through config alone."""
    import torch

    from imf.config import load_config
    from imf.data.normalizer import MinMaxNormalizer
    from imf.policy import ImfPolicy

    _fake_install_window(tmp_path, monkeypatch)
    norm = MinMaxNormalizer()
    for key in ("action", "agent_pos"):
        norm.fit(key, np.array([[0.0, 0.0], [512.0, 512.0]]))
    norm.set_identity_range("image", 0.0, 1.0)
    torch.manual_seed(0)
    policy = ImfPolicy(load_config("smoke", ["policy.mask=window", "policy.mask_options.width=1"]), norm).eval()
    assert policy.model.self_mask.sum().item() == policy.horizon  # width 1: each token sees itself only
    obs = {"image": torch.rand(2, 2, 3, 96, 96), "agent_pos": torch.rand(2, 2, 2) * 512}
    with torch.no_grad():
        actions = policy.predict_action(obs, generator=torch.Generator().manual_seed(0))
    assert actions.shape == (2, 8, 2) and torch.isfinite(actions).all()
