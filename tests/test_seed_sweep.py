"""examples/seed_sweep.sh, the mission's two full-size sweeps: its dry run plans both on local
queues standing in for the GPU host (no GPU, no network), and its default queues are valid."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs the script, and imf under it, as processes

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "seed_sweep.sh"
LOCAL = "local:cpu local:cpu local:cpu"


def run_script(tmp_path: Path, *args: str, path: str | None = None, **env: str):
    full_env = {**os.environ, "OUT": str(tmp_path / "runs"), "SWANLAB_MODE": "offline",
                # the imf of the python running the tests, whatever PATH says
                "PATH": path or f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", **env}
    full_env.pop("IMF_TRIAL_COMMAND", None)
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=tmp_path,
                          env=full_env, timeout=600)


def test_the_dry_run_plans_both_sweeps_and_the_mask_is_their_only_difference(tmp_path):
    proc = run_script(tmp_path, "--dry-run", SEED_SWEEP_QUEUES=LOCAL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    for name, config in (("full", "pusht_image_imf_fullattn"), ("causal", "pusht_image_imf")):
        assert f"sweep '{name}' in {tmp_path / 'runs' / name}: 9 trials on 3 queues (config {config}" in out
        for n_emb in (128, 256, 384):
            for n_layer in (6, 12, 18):
                assert f"{name}-{name}-e{n_emb}-l{n_layer}-s42 on local:cpu" in out
    # against the causal preset: the full sweep moves the mask, and both sweeps n_head to 1
    assert "every trial differs from preset pusht_image_imf in: policy.mask 'causal' -> 'full', " \
           "policy.n_head 4 -> 1\n" in out
    assert "every trial differs from preset pusht_image_imf in: policy.n_head 4 -> 1\n" in out
    commands = [line for line in out.splitlines() if " -m imf trial " in line]
    assert len(commands) == 18
    assert all("--epochs 350" in c and "--seed 42" in c and "--final-eval 200" in c for c in commands)
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing


def test_the_default_queues_are_this_gpu_and_two_of_the_gpu_host(tmp_path):
    """A stand-in imf records what the script passes (there is no gpubox to ask); the specs it
    gets are then resolved with the hosts file, as a sweep would, without contacting anything."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "calls.txt"
    (bin_dir / "imf").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(record))}\n')
    (bin_dir / "imf").chmod(0o755)
    proc = run_script(tmp_path, "--dry-run", path=f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert proc.returncode == 0, proc.stderr
    calls = [shlex.split(line) for line in record.read_text().splitlines()]
    assert [c[c.index("--mask") + 1] for c in calls] == ["full", "causal"]
    queues = [[c[i + 1] for i, arg in enumerate(c) if arg == "--queue"] for c in calls]
    assert queues[0] == queues[1] == ["local:0", "ssh://me@gpubox/gpu:0", "ssh://me@gpubox/gpu:1"]
    from imf.sweep.queues import load_hosts, resolve_queues
    hosts = load_hosts(SCRIPT.parent / "hosts_seed.yaml")
    resolved = resolve_queues(queues[0], hosts)
    assert [q.name for q in resolved] == queues[0]
    assert resolved[1].options["python"] == "~/imf/.venv/bin/python"  # the host's entry applies
