"""Schedulers that run the job wrapper (imf/scheduler/wrapper.py) on the machine of their slot:
``local`` calls it in this process, ``ssh`` runs ``python -m imf.scheduler.wrapper`` over SSH.
A subclass says how to run a wrapper command (``_wrapper``) and where a job's folder is; starting,
probing, stopping and fetching are the same for both and read the wrapper's one output format.
"""
from __future__ import annotations

import io
import json
import re
import shlex
import tarfile
from abc import abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import Any

from imf.errors import BusyError, FolderInUseError, QueueError
from imf.scheduler.base import Handle, JobRequest, JobStatus, Scheduler, fill_argv
from imf.scheduler.gpu_probe import PROBE_TIMEOUT_S
from imf.scheduler.wrapper import RESUME_SEP
from imf.scheduler.plugin_check import CHECK_TIMEOUT_S, failure

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" lets a final newline in


def parse_probe(data: dict[str, Any], token: str | None = None) -> JobStatus:
    """The wrapper's ``probe`` object as a JobStatus. With ``token``, a pid file of another
    attempt reads as "absent" and an exit file of another attempt is ignored."""
    if not data.get("exists") or data.get("pid") is None or (token and data.get("token") != token):
        return JobStatus("absent")
    status = JobStatus("running", log_size=int(data.get("log_size") or 0),
                       out_size=int(data.get("out_size") or 0), new_log=data.get("new_log") or "")
    status.pid, status.start_time = data["pid"], data.get("start_time")
    if data.get("exit_code") is not None and (not token or data.get("exit_token") == token):
        status.state, status.exit_code = "exited", int(data["exit_code"])
    elif not data.get("alive"):
        status.state = "lost"
    return status


class WrappedScheduler(Scheduler):
    """Start, probe, stop and fetch through the job wrapper; subclasses run it."""

    resumes_lost_jobs = True  # the wrapper resumes in place where latest.pt is, never beside a live job
    log_chunk = 1 << 20  # most bytes of logs.json.txt one poll reads
    stop_grace_s = 5.0
    device = "cpu"  # "cpu" or a GPU index, from the spec
    default_threads: int | None = None  # thread variables of a cpu slot without a "threads" option

    @abstractmethod
    def _wrapper(self, args: list[str], timeout: float = 60.0) -> tuple[int, bytes, str]:
        """Run ``python -m imf.scheduler.wrapper ARGS`` on the slot's machine -> (rc, stdout, stderr)."""

    def slot_env(self) -> dict[str, str]:
        """Environment variables this slot sets for its jobs: the ``env`` option, then the
        device (CUDA_VISIBLE_DEVICES) and, on a cpu slot, the thread counts."""
        env = {str(k): str(v) for k, v in (self.options.get("env") or {}).items()}
        if self.device == "cpu":
            env.setdefault("CUDA_VISIBLE_DEVICES", "")
            threads = self.options.get("threads") or self.default_threads
            for var in THREAD_VARS if threads else ():
                env.setdefault(var, str(max(1, int(threads))))
        else:
            env.setdefault("CUDA_VISIBLE_DEVICES", self.device)
        return env

    @property
    def gpu(self) -> str | None:
        return None if self.device == "cpu" else self.device

    def probe_key(self) -> Any:
        env = sorted((self.options.get("env") or {}).items())
        return (type(self).__name__, self.host_label(), self.python, repr(env))

    def probe_gpus(self) -> dict[str, Any]:
        env = [f"{k}={v}" for k, v in (self.options.get("env") or {}).items()]
        rc, out, err = self._wrapper(["gpus", self.python, *env], timeout=PROBE_TIMEOUT_S + 30)
        try:
            data = json.loads(out) if rc == 0 else None
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("devices"), list):
            raise QueueError(f"queue '{self.spec}': the GPU probe on {self.host_label()} failed "
                             f"(exit {rc}): {err.strip()[-300:] or out[-300:]!r}")
        return data

    def config_path(self, job: JobRequest) -> str:
        return job.config

    def command(self, job: JobRequest, run_dir: str, config: str | None = None) -> list[str]:
        return fill_argv(job.argv, self.python, run_dir, config or self.config_path(job))

    def planned_config_path(self, job: JobRequest) -> str:
        """Where the job's config will be, worked out without contacting the machine."""
        return self.config_path(job)

    def describe(self, job: JobRequest) -> str:
        env = [f"{k}={v}" for k, v in {**self.slot_env(), **job.env}.items()]
        argv = self.command(job, self.job_dir(job), self.planned_config_path(job))
        return shlex.join((["env", *env] if env else []) + argv)

    def check_plugins(self, wanted: list[str]) -> None:
        """QueueError unless every ``group:name`` plugin imports on the slot's machine."""
        rc, out, err = self._wrapper(["plugins", *wanted], timeout=CHECK_TIMEOUT_S)
        why = failure(rc, out, err)
        if why:
            raise QueueError(f"queue '{self.spec}': {self.host_label()} {why}")

    def start(self, job: JobRequest) -> Handle:
        run_dir = self.job_dir(job)
        env = {**self.slot_env(), **job.env}
        bad = [k for k in env if not _ENV_KEY.match(k)]
        if bad:
            raise QueueError(f"queue '{self.spec}': invalid environment variable name '{bad[0]}'")
        resume = [RESUME_SEP, *self.command(replace(job, argv=job.resume_argv), run_dir)] \
            if job.resume and job.resume_argv else []  # chosen by the wrapper where latest.pt is
        args = ["start", run_dir, job.token, *(f"{k}={v}" for k, v in env.items()), "--",
                *self.command(job, run_dir), *resume]
        rc, out, err = self._wrapper(args)
        fields = out.decode(errors="replace").split()
        if rc == 4 and fields[:1] == ["busy"]:
            holder = Handle(self.spec, run_dir, str(job.run_dir), fields[3] if len(fields) > 3 else "",
                            int(fields[1]), fields[2])
            raise BusyError(f"queue '{self.spec}': {run_dir} still holds a live job (pid "
                            f"{holder.pid}) of another attempt; its files stay", holder)
        if rc == 5 and fields[:1] == ["locked"] and len(fields) >= 5:
            raise FolderInUseError(f"queue '{self.spec}': {run_dir} is in use by trial "
                                   f"{' '.join(fields[4:])} (pid {fields[1]} on {fields[2]}, since "
                                   f"{fields[3]}); its files stay")
        if rc == 6 and fields[:1] == ["refused"]:
            raise QueueError(f"queue '{self.spec}': {job.trial_id} may not start in {run_dir}: "
                             f"{' '.join(fields[1:])}")
        if rc != 0 or len(fields) < 2 or not fields[0].isdigit():
            raise QueueError(f"queue '{self.spec}': could not start {job.trial_id} in {run_dir} "
                             f"(exit {rc}): {err.strip()[-300:] or 'no pid file written'}")
        return Handle(self.spec, run_dir, str(job.run_dir), job.token, int(fields[0]), fields[1])

    def poll(self, handle: Handle, offset: int = 0) -> JobStatus:
        return parse_probe(self.probe(handle, offset), handle.token)

    def probe(self, handle: Handle, offset: int = 0) -> dict[str, Any]:
        """The wrapper's ``probe`` object for the job's folder (QueueError when it fails)."""
        rc, out, err = self._wrapper(["probe", handle.dir, str(int(offset)), str(self.log_chunk)])
        try:
            data = json.loads(out) if rc == 0 else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise QueueError(f"queue '{self.spec}': probe of {handle.dir} failed (exit {rc}): "
                             f"{err.strip()[-300:] or out[-300:]!r}")
        return data

    def revoke(self, handle: Handle) -> bool:
        rc, out, err = self._wrapper(["revoke", handle.dir, handle.token])
        answer = out.decode(errors="replace").strip()
        if rc != 0 or answer not in ("started", "revoked"):
            raise QueueError(f"queue '{self.spec}': revoke in {handle.dir} failed (exit {rc}): "
                             f"{err.strip()[-300:] or answer[-300:]!r}")
        return answer == "revoked"

    def stop(self, handle: Handle) -> None:
        self._wrapper(["stop", handle.dir, f"{self.stop_grace_s:g}", handle.token],
                  timeout=self.stop_grace_s + 30)

    def pack(self, handle: Handle, files: list[str]) -> None:
        """Copy ``files`` (relative to the job's folder) home into its local folder."""
        rc, out, err = self._wrapper(["pack", handle.dir, *files], timeout=3600)
        if rc != 0 and not out:
            raise QueueError(f"queue '{self.spec}': fetching {handle.dir} failed: {err.strip()[-300:]}")
        dest = Path(handle.local_dir)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(out)) as tar:
            tar.extractall(dest, filter="data")
