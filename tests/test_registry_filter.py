"""The IMF_PLUGINS filter normalises names (PEP 503) and explains itself; shadowing is reported."""
from __future__ import annotations

import pytest
from plugin_fakes import fake_distribution
from typer.testing import CliRunner

from imf import registry
from imf.cli import app
from imf.errors import UnknownPluginError

BANDED = "def window(n_action, n_time, n_obs):\n    return None\n"


@pytest.fixture
def window(tmp_path, monkeypatch):
    src = tmp_path / "src"
    fake_distribution(src, "imf-window-mask", "imf_window_fake", BANDED,
                      {"imf.masks": {"window": "imf_window_fake:window"}})
    monkeypatch.syspath_prepend(str(src))
    return src


@pytest.mark.parametrize("spec", ["imf-window-mask", "imf_window_mask", "IMF-Window-Mask",
                                  "imf.window_mask", " other , IMF__window--mask "])
def test_spellings_of_a_distribution_name_all_allow_it(window, monkeypatch, spec):
    monkeypatch.setenv("IMF_PLUGINS", spec)
    assert registry.get("imf.masks", "window") is not None


def test_an_excluded_plugin_is_named_in_the_error(window, monkeypatch):
    monkeypatch.setenv("IMF_PLUGINS", "someone-else")
    with pytest.raises(UnknownPluginError) as err:
        registry.get("imf.masks", "window")
    assert str(err.value) == ("unknown mask 'window' in imf.masks; 'window' is provided by "
                              "imf-window-mask, which IMF_PLUGINS excludes; installed: causal, full")
    with pytest.raises(UnknownPluginError, match="installed: causal, full$"):
        registry.get("imf.masks", "other")  # nothing of that name at all: no excuse given
    shown = CliRunner().invoke(app, ["plugins"]).output
    assert "window           imf-window-mask  EXCLUDED by IMF_PLUGINS" in shown


def test_a_sweep_names_the_exclusion_too(window, monkeypatch, tmp_path):
    from imf.sweep.launch import SweepRequest, plan_sweep
    monkeypatch.setenv("IMF_PLUGINS", "")
    req = SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu"], mask="window", out=tmp_path)
    with pytest.raises(UnknownPluginError, match="imf-window-mask, which IMF_PLUGINS excludes"):
        plan_sweep(req)


def test_a_third_party_plugin_shadowing_a_builtin_is_reported(tmp_path, monkeypatch):
    src = tmp_path / "src"
    fake_distribution(src, "imf-evil", "imf_evil", BANDED, {"imf.masks": {"causal": "imf_evil:window"}})
    monkeypatch.syspath_prepend(str(src))
    assert registry.get("imf.masks", "causal").__module__ == "imf.attention"
    infos = [i for i in registry.discover("imf.masks") if i.name == "causal"]
    assert [(i.dist, i.status) for i in infos] == [("imf", "ok"), ("imf-evil", "shadowed")]
    runner = CliRunner()
    line = next(ln for ln in runner.invoke(app, ["plugins"]).output.splitlines() if "imf-evil" in ln)
    assert "SHADOWED: ignored: imf's built-in 'causal' answers to this name" in line
    rows = [r for r in __import__("json").loads(runner.invoke(app, ["plugins", "--json"]).output)
            if r["name"] == "causal"]
    assert [r["status"] for r in rows] == ["ok", "shadowed"]
