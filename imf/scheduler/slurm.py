"""The ``slurm`` scheduler: ``slurm://PARTITION?slots=N&gpus=1&cpus=8&mem=32G&time=12:00:00``.

Each trial is one Slurm job submitted with submitit (job name = trial id, comment = the
attempt's token); it runs ``TrialCommand`` in the trial's run folder, which must be on a file
system the nodes share with the controller. One spec is ``slots`` queue slots, so at most that
many of the sweep's trials are in the partition at a time. Every key but the partition is
optional: ``account``, ``qos``, ``constraint``, ``gpus`` (per job), ``cpus`` (per task),
``mem``, ``time``. A hosts file entry named after the partition may carry the same keys,
plus ``setup`` (shell lines run in the job before the trial), ``python`` and ``env``.

Status comes from one ``squeue`` per poll for all the sweep's jobs, ``sacct`` for jobs squeue
no longer lists (when accounting answers), and the run folder's files.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from imf.errors import FolderInUseError, QueueError
from imf.scheduler import claim
from imf.scheduler.base import GROUP, Handle, JobRequest, JobStatus, Scheduler, fill_argv
from imf.scheduler.plugin_check import loaded_here, run_here, same_python
from imf.scheduler.wrapper import STARTED, revoke as revoke_in
from imf.scheduler.slurm_status import QUEUED, RUNNING, read_progress, slurm_status
from imf.store import RunLayout, live_holder

SPEC_RE = re.compile(r"^slurm://(?P<partition>[^/?#\s]*)/?(?:\?(?P<query>[^#]*))?$")
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
TIME_RE = re.compile(r"^(?:\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(?::\d{1,2}(?::\d{1,2})?)?)\Z")
MEM_RE = re.compile(r"^\d+[KMGT]?B?\Z", re.IGNORECASE)  # \Z: "$" lets a final newline in
QUERY_KEYS = ("slots", "gpus", "cpus", "mem", "time", "account", "qos", "constraint")
OPTION_KEYS = (*QUERY_KEYS, "setup", "python", "env")
SQUEUE_FORMAT = "%i|%T|%r|%k"
STOP_WAIT_S = 120.0
MAX_SLOTS = 1000  # one queue state each: far more than a sweep's trials, and no hang on a typo


def _query(spec: str, query: str | None) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in (query or "").split("&"):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq or not value:
            raise QueueError(f"queue spec '{spec}': '{item}' is not KEY=VALUE")
        if key not in QUERY_KEYS:
            raise QueueError(f"queue spec '{spec}': unknown key '{key}'; allowed: "
                             f"{', '.join(QUERY_KEYS)} (and speed)")
        values[key] = value
    return values


def _count(spec: str, key: str, value: Any, least: int, most: int | None = None) -> int:
    text = str(value).strip()
    if not text.isdigit() or int(text) < least or most is not None and int(text) > most:
        bounds = f">= {least}" if most is None else f"from {least} to {most}"
        raise QueueError(f"queue '{spec}': {key} must be a whole number {bounds}, got {value!r}")
    return int(text)


def minutes(limit: str) -> int:
    """A Slurm time limit in whole minutes, rounded up as Slurm does."""
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        hours, mins, secs = (parts + [0, 0])[:3]
    else:
        hours, mins, secs = {1: (0, parts[0], 0), 2: (0, *parts), 3: tuple(parts)}[len(parts)]
    total = (int(days or 0) * 24 + hours) * 60 + mins
    return total + (1 if secs else 0)


def parse_spec(spec: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The partition and the checked job parameters (spec query over hosts-file options)."""
    match = SPEC_RE.match(spec.strip())
    if not match or not NAME_RE.match(match.group("partition")):
        raise QueueError(f"queue spec '{spec}': expected slurm://PARTITION?slots=N&gpus=G&cpus=C"
                         f"&mem=M&time=T&account=A&qos=Q&constraint=C (every key optional)")
    unknown = [k for k in options if k not in OPTION_KEYS and k not in ("speed", "threads")]
    if unknown:
        raise QueueError(f"queue '{spec}': unknown option '{unknown[0]}' in the hosts file; "
                         f"allowed: {', '.join(OPTION_KEYS)}")
    given = {**{k: v for k, v in options.items() if k in QUERY_KEYS},
             **_query(spec, match.group("query"))}
    params: dict[str, Any] = {"slots": _count(spec, "slots", given.get("slots", 1), 1, MAX_SLOTS)}
    for key in ("gpus", "cpus"):
        if key in given:
            params[key] = _count(spec, key, given[key], 0 if key == "gpus" else 1)
    if "time" in given:
        if not TIME_RE.match(str(given["time"])):
            raise QueueError(f"queue '{spec}': time must be a Slurm time limit (MINUTES, "
                             f"HH:MM:SS or D-HH:MM:SS), got {given['time']!r}")
        params["time"] = str(given["time"])
    if "mem" in given:
        if not MEM_RE.match(str(given["mem"])):
            raise QueueError(f"queue '{spec}': mem must be a size such as 32G or 4000M, "
                             f"got {given['mem']!r}")
        params["mem"] = str(given["mem"])
    for key in ("account", "qos", "constraint"):
        if key in given:
            value = str(given[key])
            if not value.strip() or any(c.isspace() for c in value):
                raise QueueError(f"queue '{spec}': {key} must be a name without spaces, got {value!r}")
            params[key] = value
    return match.group("partition"), params


def _setup(spec: str, value: Any) -> list[str]:
    lines = [value] if isinstance(value, str) else value
    if not isinstance(lines, list) or not all(isinstance(s, str) for s in lines):
        raise QueueError(f"queue '{spec}': setup must be a shell line or a list of them")
    return list(lines)


class SlurmScheduler(Scheduler):
    query_keys = QUERY_KEYS
    option_keys = OPTION_KEYS  # a hosts file's ssh defaults (workdir, ...) are not for a partition
    handle_keys = {"job_id": str}
    requires = ("submitit",)  # distributions it needs (imf plugins lists them)

    def __init__(self, spec: str, options: dict[str, Any] | None = None):
        super().__init__(spec, options)
        self.partition, self.params = parse_spec(spec.split("#", 1)[0], self.options)
        self.setup = _setup(spec, self.options.get("setup") or [])

    @classmethod
    def slots(cls, spec: str, options: dict[str, Any] | None = None) -> int:
        return parse_spec(spec, dict(options or {}))[1]["slots"]


    @property
    def gpu(self) -> str | None:
        return "any" if self.params.get("gpus") else None  # Slurm sets CUDA_VISIBLE_DEVICES

    def batch_key(self) -> Any:
        return "slurm"  # one squeue answers for every Slurm slot of the sweep

    # ------------------------------------------------------------------ commands
    def _run(self, argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
        if shutil.which(argv[0]) is None:
            raise QueueError(f"queue '{self.spec}': '{argv[0]}' not found; run the sweep where "
                             f"the Slurm client commands are installed (a login node)")
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise QueueError(f"queue '{self.spec}': {argv[0]} did not answer in {timeout:g}s") from None
        except OSError as exc:
            raise QueueError(f"queue '{self.spec}': cannot run {argv[0]}: {exc}") from None

    def preflight(self) -> None:
        self.check()

    def check(self) -> None:
        proc = self._run(["sinfo", "-h", "-o", "%R"])
        if proc.returncode != 0:
            raise QueueError(f"queue '{self.spec}': Slurm does not answer: "
                             f"{proc.stderr.strip()[-300:] or 'sinfo failed'}")
        partitions = sorted(set(proc.stdout.split()))
        if self.partition not in partitions:
            raise QueueError(f"queue '{self.spec}': Slurm has no partition '{self.partition}'; "
                             f"partitions: {', '.join(partitions) or 'none'}")

    def check_plugins(self, wanted: list[str]) -> None:
        """The nodes cannot be asked before a job runs there; the submit host shares their file
        system, so its shell runs the partition's setup lines, then its python (with its env)
        loads imf, submitit and the plugins. A python this host does not have is not checked."""
        wanted = [*wanted, f"{GROUP}:slurm"]  # the job unpickles imf's command with submitit
        plain = same_python(self.python) and not self.setup and not self.options.get("env")
        if plain and loaded_here(wanted):
            return
        env = {str(k): str(v) for k, v in (self.options.get("env") or {}).items()}
        run_here(self.spec, self.python, wanted, env=env, setup=self.setup, missing_ok=True,
                 label=f"the submit host's '{self.python}'" + (" after the setup lines" if self.setup else ""))

    # ------------------------------------------------------------------ jobs
    def job_dir(self, job: JobRequest) -> str:
        return str(job.run_dir.resolve())

    def _fill(self, argv: list[str], job: JobRequest) -> list[str]:
        return fill_argv(argv, self.python, self.job_dir(job), job.config)

    def sbatch_parameters(self, job: JobRequest) -> dict[str, Any]:
        """The job's Slurm parameters, named as sbatch's long options."""
        p = self.params
        named = {"partition": self.partition, "job-name": job.trial_id, "time": p.get("time"),
                 "gpus-per-node": p.get("gpus"), "cpus-per-task": p.get("cpus"),
                 "mem": p.get("mem"), "account": p.get("account"), "qos": p.get("qos"),
                 "constraint": p.get("constraint"), "comment": f"imf:{job.token or 'TOKEN'}"}
        return {k: v for k, v in named.items() if v is not None}

    def describe(self, job: JobRequest) -> str:
        params = " ".join(f"--{k}={shlex.quote(str(v))}" for k, v in self.sbatch_parameters(job).items())
        setup = "".join(f"{line}; " for line in self.setup)
        argv = job.resume_argv if job.resume else job.argv
        return f"sbatch {params}: {setup}{shlex.join(self._fill(argv, job))}"

    def _executor(self, job: JobRequest):
        import submitit  # only a sweep with a Slurm queue needs it

        executor = submitit.SlurmExecutor(folder=Path(self.job_dir(job)) / "slurm",
                                          python=shlex.quote(self.python))
        params = self.sbatch_parameters(job)
        kwargs: dict[str, Any] = {"partition": self.partition, "job_name": job.trial_id,
                                  "comment": params["comment"], "setup": self.setup,
                                  # the sweep resumes trials itself; URG is ignored by default
                                  "additional_parameters": {"signal": "URG@1"}}
        if "time" in params:
            kwargs["time"] = minutes(params["time"])
            kwargs["additional_parameters"]["time"] = params["time"]
        for key, name in (("gpus-per-node", "gpus_per_node"), ("cpus-per-task", "cpus_per_task"),
                          ("mem", "mem"), ("account", "account"), ("qos", "qos"),
                          ("constraint", "constraint")):
            if key in params:
                kwargs[name] = params[key]
        executor.update_parameters(**kwargs)
        return executor

    def start(self, job: JobRequest) -> Handle:
        from imf.scheduler.slurm_command import TrialCommand

        run_dir = Path(self.job_dir(job))
        run_dir.mkdir(parents=True, exist_ok=True)
        with claim.locked(run_dir):  # the job runs only while the claim is its attempt's
            self._claim(run_dir, job)
        env = {str(k): str(v) for k, v in {**(self.options.get("env") or {}), **job.env}.items()}
        command = TrialCommand(str(run_dir), self._fill(job.argv, job), job.token,
                               self._fill(job.resume_argv or job.argv, job), job.resume, env)
        try:
            submitted = self._executor(job).submit(command)
        except Exception as exc:  # submitit raises its own errors for a failed sbatch
            text = " ".join(str(exc).split())
            raise QueueError(f"queue '{self.spec}': sbatch of {job.trial_id} failed: "
                             f"{text[-300:]}") from None
        return Handle(self.spec, str(run_dir), str(job.run_dir), job.token,
                      extra={"job_id": str(submitted.job_id)})

    def _claim(self, run_dir: Path, job: JobRequest) -> None:
        """Refuse a folder its claim or a live trial forbids, archive the earlier attempt (not
        for a resume), and claim the folder for ``job``'s attempt, before anything is submitted."""
        why = claim.refusal(claim.read_claim(run_dir), job.token)
        if why is not None:
            raise QueueError(f"queue '{self.spec}': {job.trial_id} may not start in {run_dir}: {why}")
        holder = live_holder(run_dir)
        if holder is not None:
            raise FolderInUseError(f"queue '{self.spec}': {run_dir} is in use by {holder.describe()}; "
                                   "its files stay")
        if not job.resume:
            RunLayout(run_dir).archive_attempt(STARTED, everything=True)
        claim.write_claim(run_dir, job.token)

    def revoke(self, handle: Handle) -> bool:
        """Revoked in the shared run folder (a job of the attempt submitted after all then runs
        nothing); one Slurm lists for the token is cancelled too."""
        if revoke_in(Path(handle.dir), handle.token) == "started":
            return False
        job_id = self._find(handle, self._squeue())
        if job_id is not None:
            self._run(["scancel", job_id])
        return True

    # ------------------------------------------------------------------ status
    def _squeue(self) -> dict[str, tuple[str, str, str]]:
        """job id -> (state, reason, comment) of this user's jobs Slurm still lists."""
        proc = self._run(["squeue", "-h", "--me", "--states=all", "-o", SQUEUE_FORMAT])
        if proc.returncode != 0:
            raise QueueError(f"queue '{self.spec}': squeue failed: {proc.stderr.strip()[-300:]}")
        jobs = {}
        for line in proc.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == 4:
                jobs[parts[0].strip()] = (parts[1].strip(), parts[2].strip(), parts[3].strip())
        return jobs

    def _sacct(self, ids: list[str]) -> dict[str, str]:
        """job id -> state from accounting, for jobs squeue forgot ({} when sacct does not answer)."""
        if not ids or shutil.which("sacct") is None:
            return {}
        proc = self._run(["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(ids)])
        if proc.returncode != 0:
            return {}
        states = {}
        for line in proc.stdout.splitlines():
            job_id, _, state = line.partition("|")
            if state:
                states[job_id.strip()] = state.split()[0]
        return states

    def _find(self, handle: Handle, jobs: dict[str, tuple[str, str, str]]) -> str | None:
        """The handle's job id, or the id of the job carrying its token (a submission whose id
        the controller did not get to save); the handle learns it."""
        if handle.extra.get("job_id"):
            return str(handle.extra["job_id"])
        token = handle.token
        for job_id, (_, _, comment) in jobs.items():
            if token and comment == f"imf:{token}":
                handle.extra["job_id"] = job_id
                return job_id
        return None

    def poll_many(self, jobs: list[tuple[Handle, int]]) -> list[JobStatus | QueueError]:
        listed = self._squeue()
        ids = [self._find(h, listed) for h, _ in jobs]
        accounted = self._sacct([i for i in ids if i and i not in listed])
        results: list[JobStatus | QueueError] = []
        for (handle, offset), job_id in zip(jobs, ids):
            state, reason = (listed[job_id][:2] if job_id in listed else
                             (accounted.get(job_id or ""), ""))
            progress = read_progress(Path(handle.dir or handle.local_dir or "."), offset, handle.token)
            results.append(slurm_status(job_id, state, reason, progress))
        return results

    def poll(self, handle: Handle, offset: int = 0) -> JobStatus:
        result = self.poll_many([(handle, offset)])[0]
        if isinstance(result, QueueError):
            raise result
        return result

    def stop(self, handle: Handle) -> None:
        """scancel the job and wait until Slurm no longer runs it (its files are then still)."""
        job_id = self._find(handle, self._squeue())
        if job_id is None:
            if handle.token and handle.dir:
                revoke_in(Path(handle.dir), handle.token)  # a submission still on its way runs nothing
            return
        proc = self._run(["scancel", job_id])
        if proc.returncode != 0 and "Invalid job id" not in proc.stderr:
            raise QueueError(f"queue '{self.spec}': scancel {job_id} failed: {proc.stderr.strip()[-300:]}")
        end = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < end:
            if self._squeue().get(job_id, ("",))[0] not in (*QUEUED, *RUNNING):
                return
            time.sleep(0.5)
        raise QueueError(f"queue '{self.spec}': job {job_id} still runs {STOP_WAIT_S:g}s after scancel")
