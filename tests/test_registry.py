import subprocess
import sys

import pytest

from imf import registry
from imf.errors import PluginError, UnknownPluginError
from plugin_fakes import fake_distribution


def test_builtin_masks_resolve_through_entry_points():
    assert {"causal", "full"} <= set(registry.names("imf.masks"))
    infos = {i.name: i for i in registry.discover("imf.masks")}
    assert infos["causal"].dist == "imf" and not infos["causal"].broken
    assert registry.get("imf.masks", "full")(3, 2, 2).self_attn is None


def test_unknown_name_lists_installed():
    with pytest.raises(UnknownPluginError, match=r"unknown mask 'diagonal' in imf.masks; installed: .*causal.*full"):
        registry.get("imf.masks", "diagonal")


def test_unknown_group():
    with pytest.raises(PluginError, match="unknown plugin group"):
        registry.names("imf.widgets")


def _install_fakes(tmp_path, monkeypatch):
    src = (tmp_path / "src")
    fake_distribution(src, "imf-fake-good", "imf_fake_good",
                      "def diag(n_action, n_time, n_obs):\n    return None\n",
                      {"imf.masks": {"diag": "imf_fake_good:diag"}})
    fake_distribution(src, "imf-fake-broken", "imf_fake_broken",
                      "raise ImportError('needs a library that is not installed')\n",
                      {"imf.masks": {"kaput": "imf_fake_broken:thing"}})
    monkeypatch.syspath_prepend(str(src))
    return src


def test_third_party_and_broken_plugins_are_isolated(tmp_path, monkeypatch):
    _install_fakes(tmp_path, monkeypatch)
    infos = {i.name: i for i in registry.discover("imf.masks")}
    assert infos["diag"].dist == "imf-fake-good" and not infos["diag"].broken
    assert infos["kaput"].broken and "needs a library" in infos["kaput"].error
    # A broken plugin never breaks lookups of other names.
    assert registry.get("imf.masks", "causal")(2, 1, 1).self_attn.shape == (2, 2)
    with pytest.raises(PluginError, match="plugin 'kaput' in imf.masks .*failed to load"):
        registry.get("imf.masks", "kaput")


def test_imf_plugins_env_restricts_third_party(tmp_path, monkeypatch):
    _install_fakes(tmp_path, monkeypatch)
    monkeypatch.setenv("IMF_PLUGINS", "imf-fake-good")
    assert "diag" in registry.names("imf.masks") and "kaput" not in registry.names("imf.masks")
    monkeypatch.setenv("IMF_PLUGINS", "")
    assert set(registry.names("imf.masks")) == {"causal", "full"}


@pytest.mark.slow
def test_cli_plugins_shows_broken_and_exits_zero(tmp_path, monkeypatch):
    src = _install_fakes(tmp_path, monkeypatch)
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "imf", "plugins"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "diag" in out.stdout and "imf-fake-good 1.0" in out.stdout
    assert "kaput" in out.stdout and "BROKEN" in out.stdout
    js = subprocess.run([sys.executable, "-m", "imf", "plugins", "--json"], capture_output=True,
                        text=True, env=env)
    import json
    rows = {(r["group"], r["name"]): r for r in json.loads(js.stdout)}
    assert rows[("imf.masks", "kaput")]["status"] == "broken"
    assert rows[("imf.masks", "causal")]["dist"] == "imf"


def test_installed_plugins_are_read_once_per_process(tmp_path, monkeypatch):
    from importlib import metadata
    scans = []
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points", lambda **kw: (scans.append(kw), real(**kw))[1])
    registry.clear_cache()
    for _ in range(3):
        registry.get("imf.masks", "causal")
        registry.names("imf.masks")
    assert scans == [{"group": "imf.masks"}]
    src = tmp_path / "src"
    src.mkdir()
    monkeypatch.syspath_prepend(str(src))  # a folder put on sys.path is looked at
    fake_distribution(src, "imf-fake-late", "imf_fake_late", "def diag(a, t, o):\n    return None\n",
                      {"imf.masks": {"late": "imf_fake_late:diag"}})  # clears the cache
    assert "late" in registry.names("imf.masks") and len(scans) == 2
