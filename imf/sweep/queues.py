"""Queue specs and the hosts file: which slots a sweep runs on, with which options.

A queue is one slot that runs one trial at a time: ``local:0``, ``local:cpu``,
``ssh://user@host[:port]/gpu:1``. A spec may end in ``?speed=1.5`` (relative speed for the
planner). A hosts YAML gives per-host options and may list the queues::

    defaults: {workdir: ~/imf-runs, python: python3}
    hosts:
      gpubox: {python: ~/imf/.venv/bin/python, ssh_options: [-i, ~/.ssh/id_ed25519], speed: 1.2}
    queues: [local:0, ssh://me@gpubox/gpu:0, ssh://me@gpubox/gpu:1]
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from imf.config import StrictLoader  # a key repeated in one mapping is refused
from imf.errors import PluginError, QueueError, SweepError
from imf import registry
from imf.scheduler import GROUP, scheduler_for, scheme_of
from imf.sweep.state import QueueState

CORE_HOST_KEYS = ("speed",)  # the planner's; every other key is a scheduler's (its option_keys)
FILE_KEYS = ("defaults", "hosts", "queues")


def detect_queues() -> list[str]:
    """``local:N`` per visible GPU (CUDA_VISIBLE_DEVICES, else ``nvidia-smi -L``), else ``local:cpu``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        if not ids or any(i.startswith("-") for i in ids):  # "" or "-1": no GPU
            return ["local:cpu"]
        if all(i.isdigit() for i in ids):  # GPU UUIDs fall through to nvidia-smi
            return [f"local:{i}" for i in ids]
    exe = shutil.which("nvidia-smi")
    if exe:
        try:
            out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        gpus = [line for line in out.splitlines() if line.startswith("GPU ")]
        if gpus:
            return [f"local:{i}" for i in range(len(gpus))]
    return ["local:cpu"]


def load_hosts(path: str | Path | None) -> dict[str, Any]:
    """Read and check a hosts YAML (``defaults``, ``hosts``, ``queues``)."""
    if not path:
        return {"defaults": {}, "hosts": {}, "queues": []}
    try:
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=StrictLoader) or {}  # noqa: S506
    except FileNotFoundError:
        raise SweepError(f"--hosts {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"--hosts {path}: cannot read it ({exc})") from None
    except yaml.YAMLError as exc:
        raise SweepError(f"--hosts {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise SweepError(f"--hosts {path}: top level must be a mapping with {', '.join(FILE_KEYS)}")
    _check_keys(data, FILE_KEYS, f"--hosts {path}")
    hosts = data.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise SweepError(f"--hosts {path}: 'hosts' must map host names to options")
    for name, opts in [("defaults", data.get("defaults") or {}), *hosts.items()]:
        if not isinstance(opts, dict):
            raise SweepError(f"--hosts {path}: options of '{name}' must be a mapping")
        _check_keys(opts, host_keys(), f"--hosts {path}: '{name}'")
    queues = data.get("queues") or []
    if not isinstance(queues, list):
        raise SweepError(f"--hosts {path}: 'queues' must be a list of queue specs")
    return {"defaults": data.get("defaults") or {}, "hosts": hosts, "queues": queues}


def host_keys() -> tuple[str, ...]:
    """Keys a hosts-file entry may hold: speed, and the ``option_keys`` every installed
    scheduler declares (a third-party scheduler adds its own keys without touching imf)."""
    keys = list(CORE_HOST_KEYS)
    for name in registry.names(GROUP):
        try:
            cls = registry.get(GROUP, name)
        except PluginError:
            continue  # a broken plugin is reported by `imf plugins`, not here
        keys += [k for k in (getattr(cls, "option_keys", None) or ()) if k not in keys]
    return tuple(keys)


def _check_keys(data: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise SweepError(f"{where}: unknown key '{unknown[0]}'; allowed: {', '.join(allowed)}")


def _split_speed(entry: Any) -> tuple[str, float | None]:
    if isinstance(entry, dict):
        spec, speed = entry.get("spec"), entry.get("speed")
    else:
        spec, _, query = str(entry).partition("?")
        items = [item for item in query.split("&") if item]
        speeds = [item.split("=", 1)[1] for item in items if item.startswith("speed=")]
        speed = speeds[-1] if speeds else None
        rest = [item for item in items if not item.startswith("speed=")]
        if rest and not _query_keys(spec):
            raise QueueError(f"queue spec '{entry}': the only option after '?' is speed=FACTOR")
        if rest:  # the scheduler's own options stay in its spec (it checks them)
            spec = f"{spec}?{'&'.join(rest)}"
    if not isinstance(spec, str) or not spec.strip():
        raise QueueError(f"queue entry {entry!r}: expected a spec such as local:0 or ssh://host/gpu:0")
    return spec.strip(), None if speed is None else _speed(speed, f"queue spec '{entry}'")


def _declared(spec: str, attribute: str, default: Any) -> Any:
    """A class attribute of the scheduler of ``spec``'s scheme (``query_keys``, ``option_keys``)."""
    try:
        return getattr(registry.get(GROUP, scheme_of(spec)), attribute, default)
    except (QueueError, PluginError):
        return default  # an unknown scheme is reported by scheduler_for with its own message


def _query_keys(spec: str) -> tuple[str, ...]:
    """The options a spec of this scheme may carry after '?' besides speed."""
    return tuple(_declared(spec, "query_keys", ()))


def _speed(value: Any, where: str) -> float:
    """A relative speed: a finite number > 0."""
    try:
        speed = float(value)
    except (TypeError, ValueError):
        raise QueueError(f"{where}: speed must be a number, got {value!r}") from None
    if not 0 < speed < math.inf:
        raise QueueError(f"{where}: speed must be a finite number > 0, got {value!r}")
    return speed


def host_options(spec: str, hosts: dict[str, Any]) -> dict[str, Any]:
    """Options for ``spec``: the file's defaults its scheduler takes (the ``option_keys`` it
    declares; speed always), then its host's entry (for URL-like specs)."""
    keys = _declared(spec, "option_keys", None)
    options = {k: v for k, v in (hosts.get("defaults") or {}).items()
               if keys is None or k in keys or k == "speed"}
    if "://" in spec:
        host = urlsplit(spec).hostname or ""
        options.update((hosts.get("hosts") or {}).get(host) or {})
    return options


def _one_trial_per_gpu(spec: str, gpu: str | None, seen: dict[tuple[str, int | None, str], str]) -> None:
    """Refuse a second queue on a GPU another queue of the sweep names (local:0 twice, or two
    SSH specs of one host and GPU, whatever their user): one trial per GPU. A batch system's
    "any" GPU is its own to hand out."""
    if gpu is None or gpu == "any":
        return
    parts = urlsplit(spec) if "://" in spec else None
    key = ((parts.hostname or "").lower(), parts.port, gpu) if parts else ("this machine", None, gpu)
    if key in seen:
        raise QueueError(f"queues '{seen[key]}' and '{spec}' name the same GPU ({key[0]} GPU {gpu}): "
                         "one trial runs per GPU; name each GPU once")
    seen[key] = spec


def resolve_queues(specs: list[Any], hosts: dict[str, Any]) -> list[QueueState]:
    """Queue states for ``specs`` (else the hosts file's, else detected); checked, not contacted."""
    entries = list(specs) or list(hosts.get("queues") or []) or detect_queues()
    parsed = [_split_speed(e) for e in entries]
    n_cpu = sum(1 for spec, _ in parsed if spec == "local:cpu")
    queues: list[QueueState] = []
    gpus: dict[tuple[str, int | None, str], str] = {}  # (host, port, GPU index) -> the spec naming it
    for spec, speed in parsed:
        options = host_options(spec, hosts)
        if spec == "local:cpu":
            options.setdefault("threads", max(1, (os.cpu_count() or 1) // max(1, n_cpu)))
        host_speed = options.pop("speed", 1.0)
        speed = speed if speed is not None else _speed(host_speed, f"--hosts options of '{spec}'")
        scheduler = scheduler_for(spec, options)  # raises for an unknown scheme or a malformed spec
        _one_trial_per_gpu(spec, scheduler.gpu, gpus)
        for _ in range(type(scheduler).slots(spec, options)):  # a batch queue: one state per slot
            names = [q.name for q in queues]
            name = spec if spec not in names else f"{spec}#{sum(n.split('#')[0] == spec for n in names) + 1}"
            queues.append(QueueState(name, spec, speed, dict(options)))
    return queues
