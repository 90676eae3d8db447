"""What GPUs a host has, as its own python sees them: the job wrapper's ``gpus`` command.

The wrapper never imports torch: it runs the host's python (the one its trials run in) on a
short script that asks torch for the CUDA devices (count, name, free and total memory), and,
when torch sees none, asks ``nvidia-smi -L`` what the driver sees, so a down queue can say
what was found. One probe answers for every GPU slot of a host. Devices are numbered as
CUDA numbers them without CUDA_VISIBLE_DEVICES (the numbers a slot's spec uses).

``IMF_GPU_PROBE`` (tests, benchmarks): a stand-in command that prints the probe's JSON.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from typing import Any

PROBE_ENV = "IMF_GPU_PROBE"
PROBE_TIMEOUT_S = 180.0  # importing torch on a loaded host takes a while

TORCH_PROBE = r'''
import json
try:
    import torch
except Exception as exc:
    print(json.dumps({"error": f"cannot import torch ({type(exc).__name__}: {exc})", "devices": []}))
    raise SystemExit(0)
found = {"torch": torch.__version__, "cuda": torch.version.cuda, "devices": []}
try:
    for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
        free, total = torch.cuda.mem_get_info(i)
        found["devices"].append({"index": i, "name": torch.cuda.get_device_name(i),
                                 "free_mib": free >> 20, "total_mib": total >> 20})
except Exception as exc:
    found["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
print(json.dumps(found))
'''


def probe(python: str, env: dict[str, str]) -> dict[str, Any]:
    """The probe's answer: ``devices`` (index, name, free_mib, total_mib), ``torch``, ``cuda``,
    ``error`` when something failed, ``nvidia_smi`` when torch found no device."""
    run_env = {**os.environ, **env}
    run_env.pop("CUDA_VISIBLE_DEVICES", None)
    stand_in = run_env.get(PROBE_ENV)
    argv = shlex.split(stand_in) if stand_in else [python, "-c", TORCH_PROBE]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              env=run_env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        found: dict[str, Any] = {"devices": [], "error": f"cannot run {argv[0]}: {exc}"}
    else:
        found = _parse(proc.stdout, proc.stderr, argv[0])
    if not found["devices"]:
        found["nvidia_smi"] = nvidia_smi_line(run_env)
    return found


def _parse(out: str, err: str, program: str) -> dict[str, Any]:
    try:
        data = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("devices"), list):
        tail = (err.strip().splitlines() or ["no output"])[-1][:200]
        return {"devices": [], "error": f"{program} gave no probe answer: {tail}"}
    return data


def nvidia_smi_line(env: dict[str, str]) -> str:
    """What ``nvidia-smi -L`` says, in a few words: its GPUs, its error, or that it is missing."""
    exe = shutil.which("nvidia-smi", path=env.get("PATH"))
    if exe is None:
        return "not installed"
    try:
        proc = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"failed ({exc})"
    gpus = [line.split(" (UUID")[0] for line in proc.stdout.splitlines() if line.startswith("GPU ")]
    if proc.returncode != 0 or not gpus:
        text = (proc.stdout + proc.stderr).strip().splitlines()
        return f"no GPU ({text[0][:160] if text else f'exit {proc.returncode}'})"
    return "; ".join(gpus)


def device_of(found: dict[str, Any], index: int) -> dict[str, Any] | None:
    """The probe's entry for CUDA device ``index``, or None."""
    for device in found.get("devices") or []:
        if isinstance(device, dict) and device.get("index") == index:
            return device
    return None


def what_was_found(found: dict[str, Any]) -> str:
    """The probe's answer in words, for a line about a missing GPU."""
    devices = found.get("devices") or []
    if devices:
        seen = f"CUDA sees {len(devices)} device(s): " + ", ".join(
            f"{d.get('index')} {d.get('name')}" for d in devices)
    elif found.get("torch"):
        seen = (f"torch {found['torch']} (CUDA {found['cuda']}) sees no device" if found.get("cuda")
                else f"torch {found['torch']} is built without CUDA")
    else:
        seen = "no answer from torch"
    parts = [seen]
    if found.get("error"):
        parts.append(str(found["error"]))
    if "nvidia_smi" in found:
        parts.append(f"nvidia-smi: {found['nvidia_smi']}")
    return "; ".join(parts)


def memory_text(device: dict[str, Any]) -> str:
    """``NAME, F GiB free of T GiB``."""
    return (f"{device.get('name')}, {device.get('free_mib', 0) / 1024:.1f} GiB free of "
            f"{device.get('total_mib', 0) / 1024:.1f} GiB")
