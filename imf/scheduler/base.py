"""Schedulers' shared code: one job per queue slot, as a detached process in its folder.

A plugin of group ``imf.schedulers`` is a class with ``from_spec(spec, options)``. The engine
picks it by the queue spec's scheme (``local:0`` -> ``local``, ``ssh://host/gpu:0`` -> ``ssh``),
so a third-party package adds a scheme by declaring an entry point of that name.

Every scheduler runs its job through the job wrapper (imf/scheduler/wrapper.py), the only writer
of the job's files in its run folder: ``pid`` ("PID STARTTIME TOKEN"), ``stdout.log``,
``exit_code`` ("CODE TOKEN"), and ``attempts/K/`` for earlier attempts; the trial writes
``logs.json.txt``. The token is the attempt's (``JobRequest.token``, kept in the handle): a poll
ignores files of another attempt, and a start refuses (``BusyError``) while the folder's job
of another attempt is alive. ``start`` returns a ``Handle`` that the engine keeps in sweep.json
and hands back to ``poll``, ``stop`` and ``fetch``. docs/INTERFACES.md, "Schedulers", is the
whole protocol; its typed contract is ``imf.contracts.Scheduler``.
"""
from __future__ import annotations

import re
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imf import registry
from imf.errors import QueueError

GROUP = "imf.schedulers"


@dataclass
class JobRequest:
    """One attempt of one trial, as the engine hands it to a scheduler.

    ``argv`` may hold the placeholders ``{python}``, ``{run_dir}`` and ``{config}``, which the
    scheduler fills for its machine (its python, the job's folder there, the config's path there).
    """
    trial_id: str
    sweep: str
    run_dir: Path  # the trial's folder on the controller's machine
    argv: list[str]
    config: str  # a preset name, or the controller's path of the sweep's resolved config file
    config_text: str | None = None  # that file's text when ``config`` is a file (for remote slots)
    env: dict[str, str] = field(default_factory=dict)
    token: str = ""  # names this attempt; the job writes it into its pid and exit files
    resume_argv: list[str] = field(default_factory=list)  # the trial continued from latest.pt
    resume: bool = False  # the previous attempt hit a time limit or was preempted: resume it


@dataclass
class Handle:
    """Where one attempt's job is. Kept in sweep.json as one flat object (``to_dict``): the
    fields below, which every scheduler fills, beside the keys its scheduler declares in
    ``Scheduler.handle_keys`` (``extra``: ssh's ``host``, Slurm's ``job_id``)."""
    queue: str = ""  # the queue's spec
    dir: str = ""  # the job's folder on the machine that runs it
    local_dir: str = ""  # the trial's folder on the controller's machine
    token: str = ""  # the attempt's token, written into its pid and exit files
    pid: int | None = None
    start_time: str | None = None  # the pid's start time: a reused pid is not the job
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        core = {k: getattr(self, k) for k in HANDLE_FIELDS}
        return {**self.extra, **core}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Handle":
        """Read back a handle of sweep.json (sweeps of older imf may lack dir and token)."""
        extra = {k: v for k, v in data.items() if k not in HANDLE_FIELDS}
        core = {k: data[k] for k in HANDLE_FIELDS if data.get(k) is not None}
        return cls(**core, extra=extra)

    def label(self) -> str:
        """The job in log lines: its batch job id, else its pid."""
        job_id = self.extra.get("job_id")
        return f"job {job_id}" if job_id else f"pid {self.pid}"

    def where(self, queue: str) -> str:
        """The job's machine, pid and token, for lines about an orphan."""
        return f"{self.extra.get('host') or queue} (pid {self.pid}, token {self.token or '-'})"


# the keys every handle has, with their JSON types (a scheduler adds its own: handle_keys)
HANDLE_FIELDS = {"queue": str, "dir": str, "local_dir": str, "token": str, "pid": int,
                 "start_time": str}


@dataclass
class JobStatus:
    """What one poll saw: the process state and the trial's log growth since ``offset``."""
    state: str  # "queued" (waiting in a batch queue), "running", "exited" (exit_code set),
    #             "lost" (gone without an exit code), "absent"
    exit_code: int | None = None
    log_size: int = 0  # bytes of logs.json.txt
    out_size: int = 0  # bytes of stdout.log
    new_log: str = ""  # logs.json.txt text from the offset asked for (may end mid-line)
    pid: int | None = None
    start_time: str | None = None
    reason: str = ""  # why it waits ("queued") or how the batch system ended it
    resume: bool = False  # ended by a time limit or a preemption: the retry resumes the trial
    requeued: bool = False  # "queued" in a batch queue it may have run from already (a requeue or a
    #                        preemption puts it back; not a suspension): its next run resumes the trial
    restarts: int = 0  # times the batch system restarted the job, as the job itself wrote it

    @property
    def done(self) -> bool:
        return self.state in ("exited", "lost")


class Scheduler(ABC):
    """Runs jobs on one queue slot; each job it starts is known by its ``Handle``. The helper
    base of the built-in schedulers: it keeps the group's contract (``imf.contracts.Scheduler``)
    and implements its optional members; a plugin may extend it, or only match the contract."""

    query_keys: tuple[str, ...] = ()  # options a spec may carry after "?" besides speed
    # the hosts-file keys it reads (an entry may hold these; "defaults" gives it only these)
    option_keys: tuple[str, ...] = ("python", "env")
    handle_keys: dict[str, type] = {}  # keys it adds to a handle's extra, with their JSON types
    default_python = sys.executable  # the interpreter of its jobs without a "python" option
    # a job that vanished without an exit code (its host restarted, its wrapper was killed) and a
    # job on a host that went down are retried with ``JobRequest.resume``: its start resumes the
    # trial from latest.pt where the job's folder has one, and refuses a folder whose job still runs
    resumes_lost_jobs = False

    def __init__(self, spec: str, options: dict[str, Any] | None = None):
        self.spec = spec
        self.options = dict(options or {})

    @property
    def python(self) -> str:
        """The python that runs the job wrapper and fills ``{python}`` in a job's argv."""
        return str(self.options.get("python") or self.default_python)

    @classmethod
    def from_spec(cls, spec: str, options: dict[str, Any] | None = None) -> "Scheduler":
        return cls(spec, options)

    @classmethod
    def slots(cls, spec: str, options: dict[str, Any] | None = None) -> int:
        """How many queue slots ``spec`` stands for (a batch queue may take several jobs)."""
        return 1

    def preflight(self) -> None:
        """Checks of the user's request that are cheap and final (an unknown partition), made
        before the sweep folder is written; raise QueueError. Reachability is ``check``'s."""

    def check(self) -> None:
        """Raise QueueError when the slot cannot run jobs now (host unreachable, ...)."""

    def check_plugins(self, wanted: list[str]) -> None:
        """Raise QueueError unless every ``group:name`` plugin imports where this slot runs
        trials; a scheduler that cannot look there (a batch system's nodes) checks nothing."""

    @property
    def gpu(self) -> str | None:
        """The GPU the slot holds: its CUDA index ("0"), "any" (a batch system hands one out),
        or None (a CPU slot). A GPU slot's trials get ``training.device=cuda``."""
        return None

    def probe_key(self) -> Any:
        """Slots with one key share one GPU probe (one host); None: the slot cannot be probed."""
        return None

    def host_label(self) -> str:
        """The machine of the slot, in lines about it."""
        return self.spec

    def probe_gpus(self) -> dict[str, Any]:
        """The CUDA devices of the slot's machine (imf/scheduler/gpu_probe.py's answer);
        QueueError when the machine cannot be asked."""
        raise QueueError(f"queue '{self.spec}': its scheduler cannot probe GPUs")

    @abstractmethod
    def job_dir(self, job: JobRequest) -> str:
        """The job's folder on the machine that runs it."""

    @abstractmethod
    def start(self, job: JobRequest) -> Handle:
        """Start ``job`` detached from the controller; return its handle."""

    @abstractmethod
    def poll(self, handle: Handle, offset: int = 0) -> JobStatus:
        """The job's state and progress; raises QueueError when the slot cannot be reached."""

    def batch_key(self) -> Any:
        """Slots with one key are polled together by one ``poll_many`` (default: alone)."""
        return id(self)

    def poll_many(self, jobs: list[tuple[Handle, int]]) -> list[JobStatus | QueueError]:
        """``poll`` of each (handle, offset); a slot that cannot be reached gives its QueueError."""
        results: list[JobStatus | QueueError] = []
        for handle, offset in jobs:
            try:
                results.append(self.poll(handle, offset))
            except QueueError as exc:
                results.append(exc)
        return results

    @abstractmethod
    def stop(self, handle: Handle) -> None:
        """Stop the job's whole process tree (TERM, then KILL after a grace period)."""

    def revoke(self, handle: Handle) -> bool:
        """After a ``poll`` found no job for ``handle`` (its start may still be on its way: the
        controller that started it died): True when attempt ``handle.token`` never runs, now or
        later (its start is revoked); False when it started after all (poll it again). A
        scheduler that cannot tell answers True: its "absent" is taken as it is."""
        return True

    def fetch(self, handle: Handle) -> None:
        """Bring the job's results home into its local run folder (local slots: nothing to do)."""

    def describe(self, job: JobRequest) -> str:
        """The job's command line as this slot would run it (for ``--dry-run``; contacts nothing)."""
        return " ".join(job.argv)

    def close(self) -> None:
        """Release connections."""


def fill_argv(argv: list[str], python: str, run_dir: str, config: str) -> list[str]:
    """A job's argv with its placeholders ``{python}``, ``{run_dir}`` and ``{config}`` filled."""
    values = {"{python}": python, "{run_dir}": run_dir, "{config}": config}
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace(key, value)
        out.append(arg)
    return out


def scheme_of(spec: str) -> str:
    """``local:0`` -> ``local``; ``ssh://user@host/gpu:0`` -> ``ssh``; ``name://...`` -> name."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9_+.-]*)(://|:)", spec)
    if not match:
        raise QueueError(
            f"queue spec '{spec}': expected local:N, local:cpu or ssh://[user@]host[:port]/gpu:N")
    return match.group(1).lower()


def scheduler_for(spec: str, options: dict[str, Any] | None = None) -> Scheduler:
    """The scheduler of ``spec``'s scheme, from the plugin registry (one-line error if unknown)."""
    cls = registry.get(GROUP, scheme_of(spec))
    return cls.from_spec(spec, options)
