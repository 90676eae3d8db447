"""Out of GPU memory is a named outcome: its reason, its exit code, one retry on a bigger GPU.

On a CPU the error is raised from inside a real trial's step (torch.cuda.OutOfMemoryError, or
the RuntimeError of older torch); the sweep's part runs the stand-in trial (--oom-on) on GPU
queues the stand-in probe (tests/fake_gpus.py) makes up.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from _sweep_helpers import FAKE_GPUS, fake_command
from imf_process import run_imf

from imf.config import load_config
from imf.errors import EXIT_GPU_OOM, GpuOutOfMemoryError
from imf.train import memory
from imf.train.memory import is_out_of_memory, out_of_memory_error


def test_the_reason_names_the_batch_the_peak_and_what_to_run_instead(monkeypatch):
    monkeypatch.setattr(memory, "gpu_memory_gib", lambda device: (22.91, 24.0))
    cuda = torch.device("cuda")
    error = out_of_memory_error(load_config("smoke", ["training.batch_size=64"]), cuda)
    assert isinstance(error, GpuOutOfMemoryError) and error.exit_code == EXIT_GPU_OOM
    assert str(error) == ("out of GPU memory at batch 64 (peak 22.9 GiB of 24.0 GiB); instead run "
                          "training.grad_accum=2 (micro-batches of 32, the same 64 windows per step), "
                          "or on a bigger card")
    halved = str(out_of_memory_error(load_config("smoke", ["training.batch_size=64",
                                                           "training.grad_accum=2"]), cuda))
    assert halved.startswith("out of GPU memory at batch 32 (") and "training.grad_accum=4 " in halved
    odd = str(out_of_memory_error(load_config("smoke", ["training.batch_size=6", "training.grad_accum=3"]), cuda))
    assert "training.grad_accum=6 (micro-batches of 1" in odd
    one = str(out_of_memory_error(load_config("smoke", ["training.batch_size=1"]), cuda))
    assert one.endswith("at batch 1 (peak 22.9 GiB of 24.0 GiB); it cannot be split: run it on a bigger card")
    monkeypatch.setattr(memory, "gpu_memory_gib", lambda device: None)
    assert "at batch 64 (peak not measured: not on a CUDA device);" in str(
        out_of_memory_error(load_config("smoke", ["training.batch_size=64"]), torch.device("cpu")))


def test_out_of_memory_is_told_from_other_errors():
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.6 GiB total)"))
    assert not is_out_of_memory(RuntimeError("CUDA error: device-side assert triggered"))
    assert not is_out_of_memory(MemoryError())  # the host's memory: not the GPU's


def _oom_on_step(monkeypatch, error: BaseException, after: int = 1) -> None:
    """The trial's step raises ``error`` once ``after`` steps went through."""
    import imf.train.trial as trial_module
    real, calls = trial_module.accumulate_gradients, []

    def step(*args, **kwargs):
        calls.append(1)
        if len(calls) > after:
            raise error
        return real(*args, **kwargs)
    monkeypatch.setattr(trial_module, "accumulate_gradients", step)


@pytest.mark.slow
@pytest.mark.parametrize("error", [torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
                                   RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB")],
                         ids=["OutOfMemoryError", "RuntimeError"])
def test_a_trial_out_of_gpu_memory_fails_with_its_reason_and_exit_code(error, demo_cache, tmp_path,
                                                                       monkeypatch, capsys):
    from test_train_trial import TINY
    import imf.cli
    _oom_on_step(monkeypatch, error)
    run = tmp_path / "run"
    monkeypatch.setattr(sys, "argv", ["imf", "trial", "smoke", *TINY, f"data.cache_dir={demo_cache}",
                                      "training.grad_accum=2", "--out", str(run), "--store", "none"])
    with pytest.raises(SystemExit) as ended:
        imf.cli.main()
    assert ended.value.code == EXIT_GPU_OOM
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("imf: error: out of GPU memory at batch 8 (peak not measured")
    assert "training.grad_accum=4 (micro-batches of 4, the same 16 windows per step)" in line
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"] == line.removeprefix("imf: error: ")


def _gpu_sweep(tmp_path, monkeypatch, free: tuple[int, int], name: str) -> tuple[dict, dict]:
    """A sweep of two trials on local:0 and local:1: the e64 one runs out of memory on every
    attempt, on a GPU with free[0] MiB free; the other GPU has free[1]. Its state and the e64 trial.
    The other trial takes seconds, so the out-of-memory one ends while the bigger GPU is busy
    and the smaller one idles: the retry must wait for the bigger one, not be taken back."""
    from imf.sweep.launch import SweepRequest, plan_sweep, start_sweep
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "1.5", "--oom-on=-e64-",
                                                         "--fail-times", "9"))
    req = SweepRequest(config="smoke", grids=["64,128x1"], queues=["local:0", "local:1"], name=name,
                       out=tmp_path, epochs=2, poll=0.1, stall_timeout=60.0, retries=3)
    planned = next(t.queue for t in plan_sweep(req)[1].trials if "-e64-" in t.id)
    gpus = {planned: free[0], ({"local:0", "local:1"} - {planned}).pop(): free[1]}
    devices = " ".join(f"{q[-1]}:{mib}:24576" for q, mib in sorted(gpus.items()))
    monkeypatch.setenv("IMF_GPU_PROBE", f"{sys.executable} {FAKE_GPUS} {devices}")
    start_sweep(req, lambda s: None)
    data = json.loads((tmp_path / name / "sweep.json").read_text())
    return data, next(t for t in data["trials"] if "-e64-" in t["id"])


@pytest.mark.slow
def test_a_sweep_retries_out_of_memory_once_on_a_gpu_with_more_free_memory(tmp_path, monkeypatch):
    data, trial = _gpu_sweep(tmp_path, monkeypatch, (8000, 20000), "oom")
    first, other = trial["history"][0]["queue"], ({"local:0", "local:1"} - {trial["history"][0]["queue"]}).pop()
    assert trial["state"] == "failed" and trial["attempts"] == 2  # retries=3, but one OOM retry
    assert [(h["queue"], h["outcome"], h["exit_code"]) for h in trial["history"]] == [
        (first, "out of memory", EXIT_GPU_OOM), (other, "out of memory", EXIT_GPU_OOM)]
    assert trial["reason"].startswith("out of GPU memory at batch 64 (peak 23.5 GiB of 24.0 GiB)")
    assert "instead run training.grad_accum=2" in trial["reason"]
    log = (tmp_path / "oom" / "sweep.log").read_text()
    assert f"retry on {other} (19.5 GiB free, {first} has 7.8 GiB)" in log
    assert [t["state"] for t in data["trials"] if t is not trial] == ["completed"]
    status = run_imf("status", str(tmp_path / "oom")).stdout
    assert f"{trial['id']} failed: out of GPU memory at batch 64" in status
    report = (tmp_path / "oom" / "report.md").read_text()
    assert "## Failed" in report and f"{trial['id']}: out of GPU memory at batch 64" in report


@pytest.mark.slow
def test_without_a_bigger_gpu_out_of_memory_is_not_retried(tmp_path, monkeypatch):
    _, trial = _gpu_sweep(tmp_path, monkeypatch, (20000, 8000), "nobig")
    assert trial["state"] == "failed" and trial["attempts"] == 1
    assert [h["outcome"] for h in trial["history"]] == ["out of memory"]
    assert "or on a bigger card" in trial["reason"]
