"""``imf sweep --cancel DIR``: stop every live job of a sweep, on every queue.

A controller still running the sweep (on this host) is asked to stop first (SIGTERM: it
stops launching and leaves its jobs, as on Ctrl-C), so it cannot start a retry of a job
cancelled here. Each cancelled trial goes back to pending with a "cancelled" entry in its
history; ``imf sweep --resume DIR`` starts them again.
"""
from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import Callable

from filelock import FileLock, Timeout

from imf.errors import QueueError, SweepError
from imf.scheduler import Handle, Scheduler, scheduler_for
from imf.sweep.folder import SweepDir
from imf.sweep.state import ACTIVE, SweepState

CONTROLLER_WAIT_S = 120.0


def _stop_controller(state: SweepState, lock: FileLock, sdir: SweepDir) -> None:
    info = state.controller or {}
    pid, host = info.get("pid"), info.get("host")
    if not isinstance(pid, int) or host != socket.gethostname():
        raise SweepError(f"{sdir.path}: a controller on {host or 'another host'} (pid {pid}) runs "
                         f"this sweep; stop it there (Ctrl-C), then --cancel again")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:
        raise SweepError(f"{sdir.path}: the controller (pid {pid}) is not yours to stop") from None
    try:
        lock.acquire(timeout=CONTROLLER_WAIT_S)
    except Timeout:
        raise SweepError(f"{sdir.path}: the controller (pid {pid}) did not stop within "
                         f"{CONTROLLER_WAIT_S:g}s; nothing was cancelled") from None


def _stop(schedulers: dict[str, Scheduler], state: SweepState, queue: str,
          handle: Handle) -> None:
    if queue not in schedulers:
        q = state.queue(queue)
        schedulers[queue] = scheduler_for(q.spec, q.options)
    schedulers[queue].stop(handle)


def cancel_sweep(path: str | Path, echo: Callable[[str], None] = print) -> int:
    """Stop the sweep's live jobs (and orphans); return how many trials were cancelled."""
    sdir = SweepDir(path)
    state = sdir.load()
    lock = FileLock(str(sdir.path / "sweep.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        _stop_controller(state, lock, sdir)
    schedulers: dict[str, Scheduler] = {}
    try:
        state = sdir.load()  # as the controller left it
        cancelled, problems = 0, []
        for trial in [t for t in state.trials if t.state in ACTIVE or t.orphans]:
            jobs = [(o.queue, o.handle) for o in trial.orphans]
            if trial.state in ACTIVE and trial.handle:
                jobs.append((trial.queue, trial.handle))
            try:
                for queue, handle in jobs:
                    _stop(schedulers, state, queue, handle)
            except QueueError as exc:
                problems.append(f"{trial.id}: {exc}")
                continue
            trial.orphans = []
            if trial.state in ACTIVE:
                trial.note_attempt("cancelled", "imf sweep --cancel")
                trial.move("requeued")
                trial.handle = None
                cancelled += 1
                echo(sdir.log(f"cancelled {trial.id}"))
        if state.status == "running":
            state.status = "interrupted"
        sdir.save(state)
        if problems:
            raise SweepError(f"{sdir.path}: {len(problems)} job(s) could not be cancelled; "
                             f"{problems[0]}")
        echo(sdir.log(f"cancelled {cancelled} trial(s); imf sweep --resume {sdir.path} "
                      f"starts them again"))
        return cancelled
    finally:
        for sch in schedulers.values():
            sch.close()
        lock.release()
