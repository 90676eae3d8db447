"""A GPU slot holds its GPU: its trials ask for CUDA, a missing GPU is one line and a queue down.

On a machine without CUDA (this one) a GPU queue must never train on the CPU; the stand-in
probe (tests/fake_gpus.py, IMF_GPU_PROBE) plays a host that has GPUs.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from _sweep_helpers import HERE, fake_command
from imf_process import run_imf

from imf.errors import EXIT_NO_CUDA, NoCudaError, SweepError
from imf.scheduler.local import LocalScheduler
from imf.sweep.engine import Engine
from imf.sweep.launch import SweepRequest, dry_run, plan_sweep, start_sweep
from imf.train.parts import pick_device

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
FAKE_GPUS = f"{sys.executable} {HERE / 'fake_gpus.py'}"


def request(tmp_path: Path, **kw) -> SweepRequest:
    base = dict(config="smoke", grids=["32x1"], queues=["local:0"], name="g", out=tmp_path,
                epochs=1, poll=0.1, stall_timeout=60.0)
    return SweepRequest(**{**base, **kw})


@NO_CUDA
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_a_cuda_device_is_its_own_error(spec):
    with pytest.raises(NoCudaError, match=f"training.device '{spec}'.*no CUDA device") as caught:
        pick_device(spec)
    assert caught.value.exit_code == EXIT_NO_CUDA != 2
    assert pick_device("auto").type == "cpu"


def test_a_gpu_slot_trial_asks_for_cuda_and_a_cpu_slot_stays_auto(tmp_path):
    req = request(tmp_path, grids=["32x1,2,3"], queues=["local:0", "local:cpu", "ssh://me@box/gpu:1"],
                  overrides=["training.lr=0.001"])
    sdir, state, _ = plan_sweep(req)
    engine = Engine(sdir, state, lambda s: None)
    argv = {t.queue: engine.job_request(t).argv for t in state.trials}
    assert set(argv) == {"local:0", "local:cpu", "ssh://me@box/gpu:1"}
    for queue in ("local:0", "ssh://me@box/gpu:1"):
        assert "training.device=cuda" in argv[queue]
        # before the user's overrides: a training.device=cpu of theirs would win
        assert argv[queue].index("training.device=cuda") < argv[queue].index("training.lr=0.001")
    assert not any(a.startswith("training.device") for a in argv["local:cpu"])


def test_one_probe_per_host_and_a_missing_gpu_takes_its_queue_down(tmp_path, monkeypatch):
    probes = []

    def probe(self):
        probes.append(self.spec)
        return {"torch": "2.0", "cuda": "12.0",
                "devices": [{"index": 0, "name": "Fake GPU 0", "free_mib": 20480, "total_mib": 24576}]}
    monkeypatch.setattr(LocalScheduler, "probe_gpus", probe)
    req = request(tmp_path, grids=["32x1,2,3,4"], queues=["local:0", "local:1", "local:cpu"])
    sdir, state, _ = plan_sweep(req)
    lines: list[str] = []
    Engine(sdir, state, lines.append).queue_health.check_queues()
    assert probes == ["local:0"]  # one probe answers for both GPU slots of this machine
    gpu0, gpu1, cpu = state.queues
    assert gpu0.state == "live" and gpu0.gpu["free_mib"] == 20480
    assert gpu1.state == "down" and gpu1.reason.startswith("no CUDA device 1 on this machine")
    assert "CUDA sees 1 device(s): 0 Fake GPU 0" in gpu1.reason
    assert cpu.state == "live" and cpu.gpu is None
    assert not [t for t in state.trials if t.queue == "local:1"]
    assert any("queue local:1 is down: no CUDA device 1" in line for line in lines)
    assert any("queue local:0: GPU 0 on this machine" in line and "20.0 GiB free of 24.0 GiB" in line
               for line in lines)


# ---------------------------------------------------------------- real processes

@pytest.mark.slow
@NO_CUDA
def test_the_wrapper_probe_asks_the_hosts_torch(tmp_path):
    import subprocess
    proc = subprocess.run([sys.executable, "-m", "imf.scheduler.wrapper", "gpus", sys.executable],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["devices"] == [] and found["torch"] == torch.__version__
    assert "nvidia_smi" in found  # what the driver says, for the line of a down queue
    stand_in = subprocess.run([sys.executable, "-m", "imf.scheduler.wrapper", "gpus", sys.executable,
                               f"IMF_GPU_PROBE={FAKE_GPUS} 0:1000:2000"],
                              capture_output=True, text=True, timeout=300)
    assert json.loads(stand_in.stdout)["devices"][0]["free_mib"] == 1000


@pytest.mark.slow
@NO_CUDA
def test_trial_on_cuda_without_cuda_is_one_line_and_its_exit_code(tmp_path):
    run = tmp_path / "run"
    proc = run_imf("trial", "smoke", "--device", "cuda", "--out", str(run), "logging.trackers=[]",
                   cwd=tmp_path)
    assert proc.returncode == EXIT_NO_CUDA, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: training.device 'cuda'")
    assert "no CUDA device" in lines[0]
    assert not run.exists()  # refused before the run folder changes


@pytest.mark.slow
@NO_CUDA
def test_a_sweep_on_a_missing_gpu_stops_without_burning_an_attempt(tmp_path):
    proc = run_imf("sweep", "smoke", "--grid", "32x1", "--epochs", "1", "--queue", "local:0",
                   "--name", "s7", "--out", str(tmp_path), cwd=tmp_path)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "local:0" in lines[0] and "no CUDA device 0" in lines[0], proc.stderr
    assert not (tmp_path / "s7").exists()  # refused before anything is written: nothing trained


@pytest.mark.slow
@NO_CUDA
def test_a_missing_gpu_sends_its_trials_to_the_cpu_queue(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02"))
    start_sweep(request(tmp_path, grids=["32x1,2"], queues=["local:0", "local:cpu"], min_queues=1), lambda s: None)
    data = json.loads((tmp_path / "g" / "sweep.json").read_text())
    assert data["queues"][0]["state"] == "down" and "no CUDA device 0" in data["queues"][0]["reason"]
    assert all(t["state"] == "completed" and t["queue"] == "local:cpu" for t in data["trials"])
    for t in data["trials"]:  # the CPU slot's trials keep training.device as configured
        config = json.loads((tmp_path / "g" / t["id"] / "config.yaml").read_text())
        assert not any(o.startswith("training.device") for o in config["overrides"])
    status = run_imf("status", str(tmp_path / "g"))
    assert "queue local:0 is down: no CUDA device 0" in status.stdout


@pytest.mark.slow
def test_a_gpu_the_probe_finds_takes_trials_with_cuda(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.02"))
    monkeypatch.setenv("IMF_GPU_PROBE", f"{FAKE_GPUS} 0:20480:24576")
    start_sweep(request(tmp_path, grids=["32x1"], queues=["local:0"]), lambda s: None)
    data = json.loads((tmp_path / "g" / "sweep.json").read_text())
    assert data["queues"][0]["state"] == "live" and data["queues"][0]["gpu"]["free_mib"] == 20480
    trial = data["trials"][0]
    assert trial["state"] == "completed" and trial["attempts"] == 1
    config = json.loads((tmp_path / "g" / trial["id"] / "config.yaml").read_text())
    assert "training.device=cuda" in config["overrides"]


@pytest.mark.slow
@NO_CUDA
def test_the_dry_run_shows_each_gpu_queues_probe(tmp_path):
    text = dry_run(request(tmp_path, grids=["32x1,2"], queues=["local:0", "local:cpu"], min_queues=1))
    assert "gpu local:0: no CUDA device 0 on this machine" in text
    assert "gpu local:cpu" not in text
    assert not (tmp_path / "g").exists()


def test_every_queue_down_is_a_sweep_error_naming_them(tmp_path, monkeypatch):
    monkeypatch.setattr(LocalScheduler, "probe_gpus", lambda self: {"torch": "2.0", "devices": []})
    sdir, state, _ = plan_sweep(request(tmp_path))
    with pytest.raises(SweepError, match=r"no queue passed its check: local:0: no CUDA device 0 on this machine"):
        Engine(sdir, state, lambda s: None).run()
    assert [t.attempts for t in state.trials] == [0]
