"""``imf sweep --dry-run``: every trial's real command, and every plugin of the plan loaded."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from plugin_fakes import fake_distribution

from imf.errors import PluginError, QueueError, SweepError
from imf.scheduler.ssh import SshScheduler
from imf.sweep.launch import SweepRequest, dry_run


def test_every_trial_shows_its_command_as_it_would_run(tmp_path, monkeypatch):
    def unreachable(self):
        raise QueueError(f"queue '{self.spec}': host box unreachable: no such host")
    monkeypatch.setattr(SshScheduler, "probe_gpus", unreachable)  # the real probe: test_gpu_slot.py
    monkeypatch.setattr(SshScheduler, "check", lambda self: None)
    monkeypatch.setattr(SshScheduler, "check_plugins", lambda self, wanted: None)  # real: test_status_truth
    monkeypatch.setattr(SshScheduler, "close", lambda self: None)
    req = SweepRequest(config="smoke", grids=["32,64x1"], queues=["local:cpu", "ssh://me@box/gpu:1"],
                       name="dr", out=tmp_path, min_queues=1)
    text = dry_run(req)
    assert "{" not in text  # no {python}, {config} or {run_dir} placeholders
    commands = [line for line in text.splitlines() if line.startswith("  dr-")]
    assert len(commands) == 2
    local = next(c for c in commands if "on local:cpu:" in c)
    remote = next(c for c in commands if "on ssh://me@box/gpu:1:" in c)
    assert f"{sys.executable} -m imf trial smoke --id dr-causal-e" in local
    assert f"--out {(tmp_path / 'dr').resolve()}/dr-causal-e" in local and "CUDA_VISIBLE_DEVICES= " in local
    assert "ssh me@box: env CUDA_VISIBLE_DEVICES=1 python3 -m imf trial smoke" in remote
    assert "--out '~/imf-runs/dr/dr-causal-e" in remote
    assert not (tmp_path / "dr").exists()
    assert "  gpu ssh://me@box/gpu:1: cannot probe GPU 1 on box: queue 'ssh://me@box/gpu:1': host box " \
           "unreachable" in text
    assert "training.device=cuda" in remote and "training.device" not in local
    assert text.splitlines()[-1] == ("plugins loaded: imf.masks: causal; imf.objectives: imf; "
                                     "imf.schedulers: local, ssh; imf.stores: iteration-log, scoreboard")


def test_the_dry_run_refuses_what_the_start_would_refuse(tmp_path, monkeypatch):
    def unreachable(self):
        raise QueueError(f"queue '{self.spec}': box cannot import imf")
    monkeypatch.setattr(SshScheduler, "check", unreachable)
    monkeypatch.setattr(SshScheduler, "close", lambda self: None)
    req = SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu", "ssh://me@box/cpu"],
                       name="dr", out=tmp_path)
    with pytest.raises(SweepError, match=r"1 of 2 queues passed their check, 2 needed .*box cannot import imf"):
        dry_run(req)
    with pytest.raises(SweepError, match="--min-queues 3: expected 1..2"):
        dry_run(SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu", "ssh://me@box/cpu"],
                             name="dr", out=tmp_path, min_queues=3))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "sweep.json").write_text("{}")
    with pytest.raises(SweepError, match="already holds a sweep"):
        dry_run(SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu"], name="taken", out=tmp_path))


def test_a_yaml_config_shows_the_copy_every_trial_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(SshScheduler, "check", lambda self: None)
    monkeypatch.setattr(SshScheduler, "check_plugins", lambda self, wanted: None)  # real: test_status_truth
    monkeypatch.setattr(SshScheduler, "close", lambda self: None)
    config = tmp_path / "mine.yaml"
    config.write_text("base: smoke\n")
    req = SweepRequest(config=str(config), grids=["32x1"], queues=["local:cpu", "ssh://box/cpu"],
                       name="y", out=tmp_path / "runs")
    text = dry_run(req)
    assert f"trial {(tmp_path / 'runs' / 'y' / 'sweep_config.yaml').resolve()} --id" in text
    assert not (tmp_path / "runs").exists()


def _broken_mask(tmp_path, monkeypatch):
    src = tmp_path / "src"
    fake_distribution(src, "imf-fake-broken", "imf_fake_broken",
                      "raise ImportError('needs a library that is not installed')\n",
                      {"imf.masks": {"kaput": "imf_fake_broken:thing"}})
    monkeypatch.syspath_prepend(str(src))
    return src


def test_a_broken_mask_plugin_fails_the_dry_run(tmp_path, monkeypatch):
    _broken_mask(tmp_path, monkeypatch)
    req = SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu"], mask="kaput", out=tmp_path)
    with pytest.raises(PluginError, match="plugin 'kaput' in imf.masks .*failed to load: ImportError"):
        dry_run(req)


@pytest.mark.slow
def test_a_broken_objective_fails_from_the_command_line(tmp_path, monkeypatch):
    src = tmp_path / "src"
    fake_distribution(src, "imf-fake-obj", "imf_fake_obj", "import not_installed_anywhere\n",
                      {"imf.objectives": {"badobj": "imf_fake_obj:Objective"}})
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "smoke", "objective.name=badobj",
                           "--grid", "32x1", "--queue", "local:cpu", "--out", str(tmp_path / "runs"),
                           "--dry-run"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "plugin 'badobj' in imf.objectives (from imf-fake-obj) failed" in lines[0]
    assert not (tmp_path / "runs").exists()
