"""``imf sweep --dry-run``: every trial's real command, and every plugin of the plan loaded."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from imf_process import run_in_process as imf
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
                                     "imf.curricula: none; imf.trackers: swanlab; "
                                     "imf.schedulers: local, ssh; imf.stores: iteration-log, scoreboard")
    checks = text[text.index("queue checks"):].splitlines()  # what a start with --min-queues 1 would use
    assert checks[:3] == ["queue checks (1 of 2 pass, 1 needed: --min-queues):", "  local:cpu: ok",
                          "  ssh://me@box/gpu:1: down: cannot probe GPU 1 on box: queue 'ssh://me@box/gpu:1': "
                          "host box unreachable: no such host"]


def test_the_dry_run_refuses_what_the_start_would_refuse(tmp_path, monkeypatch):
    def unreachable(self):
        raise QueueError(f"queue '{self.spec}': box cannot import imf")
    monkeypatch.setattr(SshScheduler, "check", unreachable)
    monkeypatch.setattr(SshScheduler, "close", lambda self: None)
    req = SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu", "ssh://me@box/cpu"],
                       name="dr", out=tmp_path)
    with pytest.raises(SweepError, match=r"^1 of 2 queues passed their check, 2 needed \(--min-queues\): "
                       r"ssh://me@box/cpu: box cannot import imf; fix them, or start with fewer \(--min-queues 1\)$"):
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




def test_the_dry_run_exits_2_in_one_line_where_the_start_would_refuse(tmp_path, monkeypatch, capsys):
    def no_imf(self):
        raise QueueError(f"queue '{self.spec}': 'python3' on box cannot import imf (ModuleNotFoundError: "
                         "No module named 'imf'); install imf there")
    monkeypatch.setattr(SshScheduler, "check", no_imf)
    monkeypatch.setattr(SshScheduler, "close", lambda self: None)
    args = ["sweep", "smoke", "--grid", "32x1", "--queue", "local:cpu", "--queue", "ssh://me@box/gpu:0",
            "--out", str(tmp_path), "--dry-run"]
    code, out, err = imf(monkeypatch, capsys, *args, "--name", "a")
    assert code == 2 and out == ""
    assert err == ("imf: error: 1 of 2 queues passed their check, 2 needed (--min-queues): ssh://me@box/gpu:0: "
                   "'python3' on box cannot import imf (ModuleNotFoundError: No module named 'imf'); install "
                   "imf there; fix them, or start with fewer (--min-queues 1)\n")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "sweep.json").write_text("{}")
    code, out, err = imf(monkeypatch, capsys, *args, "--name", "taken", "--min-queues", "1")
    assert code == 2 and out == ""
    assert err == (f"imf: error: {tmp_path / 'taken'} already holds a sweep; continue it with --resume "
                   f"{tmp_path / 'taken'} or choose another --name\n")
    assert sorted(os.listdir(tmp_path)) == ["taken"]  # nothing written


def test_the_plugins_a_trial_loads_are_those_checked_where_it_runs(tmp_path):
    from imf.sweep.launch import plan_sweep
    from imf.sweep.probe import plugin_names
    req = SweepRequest(config="smoke", grids=["32x1", "data.curriculum=none,easy_first"], queues=["local:cpu"],
                       name="p", out=tmp_path, overrides=["logging.trackers=tensorboard"])
    _, state, _ = plan_sweep(req)
    # the stores are the controller's (trials run with --store none); the schedulers too
    assert plugin_names(state) == ["imf.masks:causal", "imf.objectives:imf", "imf.curricula:easy_first",
                                   "imf.curricula:none", "imf.trackers:tensorboard"]
    state.trials[0].overrides.append("data.curriculum=doubling")  # a trial's own override counts too
    assert "imf.curricula:doubling" in plugin_names(state)


def _env_broken_mask(tmp_path: Path, name: str = "envmask") -> Path:
    """A mask that imports here but not where IMF_TEST_BROKEN_HOST is set (another host's python)."""
    return fake_distribution(tmp_path / "site", "imf-env-mask", "imf_env_mask",
                             "import os\nif os.environ.get('IMF_TEST_BROKEN_HOST'):\n"
                             "    raise ImportError('this host has no numpy of the right version')\n"
                             "from imf.attention import causal as mask\n",
                             {"imf.masks": {name: "imf_env_mask:mask"}})


@pytest.mark.slow
def test_a_start_refuses_a_local_slot_whose_trials_cannot_load_a_plugin_and_writes_nothing(tmp_path, monkeypatch):
    from _sweep_helpers import fake_command
    from imf import registry
    from imf.sweep.launch import start_sweep
    site = _env_broken_mask(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01"))
    hosts = tmp_path / "hosts.yaml"  # the slot's env is the trials' (and the check's)
    hosts.write_text(f"defaults:\n  env: {{PYTHONPATH: {site}, IMF_TEST_BROKEN_HOST: '1'}}\n")
    req = SweepRequest(config="smoke", grids=["32x1"], queues=["local:cpu"], hosts=str(hosts),
                       mask="envmask", name="e", out=tmp_path / "runs", epochs=1, poll=0.1)
    with pytest.raises(SweepError, match=r"^no queue passed its check: local:cpu: .*cannot load imf.masks "
                                         r"plugin 'envmask': .*ImportError: this host has no numpy"):
        start_sweep(req, lambda s: None)
    assert not (tmp_path / "runs").exists()
    registry.clear_cache()

