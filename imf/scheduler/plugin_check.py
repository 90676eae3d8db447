"""Whether a slot's python can load what its trials load: imf, and the ``group:name`` plugins a
sweep's trials use, imported as a trial would (the job wrapper's ``plugins`` command).

A slot's queue check calls it: local slots and Slurm partitions run the python on this machine
(``run_here``), the ssh scheduler runs the same command on its host. ``failure`` turns what the
command printed into the one line a queue is down with.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from imf import registry
from imf.errors import QueueError

CHECK_TIMEOUT_S = 180.0  # the plugins may import torch on a slow, shared file system
PLUGINS_EXIT = 6  # the wrapper's exit when a plugin does not load
NOT_FOUND_EXIT = 127  # the shell's exit when it cannot find the python it is to run
_SPEC_FAILURE = re.compile(r"Error while finding module specification for '[^']*' \((.*)\)$")


def loaded_here(wanted: list[str]) -> bool:
    """Every plugin of ``wanted`` is imported in this process already (the sweep's plan loads
    its trials' plugins to check their options): asking a new process would find the same."""
    for item in wanted:
        group, _, name = item.partition(":")
        info = next((p for p in registry.discover(group, load=False) if p.name == name), None)
        if info is None or info.value.split(":", 1)[0] not in sys.modules:
            return False
    return True


def same_python(python: str) -> bool:
    """``python`` is the interpreter running this process."""
    return os.path.realpath(os.path.expanduser(python)) == os.path.realpath(sys.executable)


def failure(rc: int, out: bytes, err: str) -> str:
    """Why ``python -m imf.scheduler.wrapper plugins ...`` failed, in one line ("" when it passed)."""
    text = out.decode(errors="replace").strip()
    lines = [line.strip() for line in text.splitlines()]  # a plugin may print as it loads
    if rc == 0 and "ok" in lines:
        return ""
    named = [line for line in lines if line.startswith("cannot load ")]
    if rc == PLUGINS_EXIT and named:
        return named[-1]  # "cannot load GROUP plugin 'NAME': why"
    last = (err.strip() or text).splitlines()[-1:] or [f"exit {rc}"]
    spec = _SPEC_FAILURE.search(last[0])  # python -m's own line when imf is not there at all
    return f"cannot import imf ({spec.group(1) if spec else last[0].strip()[-300:]})"


def run_here(spec: str, python: str, wanted: list[str], *, env: dict[str, str] | None = None,
             setup: list[str] | None = None, label: str = "", missing_ok: bool = False) -> None:
    """Run the wrapper's ``plugins`` command with ``python`` on this machine, after the shell
    lines ``setup`` and with ``env`` added (as the slot's jobs run); QueueError naming ``label``
    (default: python 'PYTHON') when imf or a plugin does not load. ``missing_ok``: a python this
    machine does not have is not checked (a batch system's nodes may have it)."""
    script = "\n".join([*(setup or []), 'exec "$0" -m imf.scheduler.wrapper plugins "$@"'])
    who = label or f"python '{python}'"
    try:
        shell = shutil.which("bash") or "sh"  # setup lines are a batch script's (bash: source, module)
        proc = subprocess.run([shell, "-c", script, os.path.expanduser(python), *wanted], capture_output=True,
                              timeout=CHECK_TIMEOUT_S, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        raise QueueError(f"queue '{spec}': {who} did not load its plugins in {CHECK_TIMEOUT_S:g}s") from None
    except OSError as exc:
        raise QueueError(f"queue '{spec}': cannot run a shell to check {who}: {exc}") from None
    if proc.returncode == NOT_FOUND_EXIT:
        if missing_ok:
            return
        raise QueueError(f"queue '{spec}': {who} not found on this machine (set 'python' in the hosts file)")
    why = failure(proc.returncode, proc.stdout, proc.stderr.decode(errors="replace"))
    if why:
        raise QueueError(f"queue '{spec}': {who} {why}")
