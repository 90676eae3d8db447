"""A Slurm trial's status: Slurm's job state, read together with the files in its run folder.

The run folder is the truth for how a trial ended (``exit_code`` carries the attempt's
token); Slurm's state says whether it waits, runs, or was ended by Slurm (time limit,
preemption, cancel, node failure, out of memory), which no file of the trial can tell.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from imf.scheduler.base import JobStatus
from imf.scheduler.wrapper import exit_code_of
from imf.store import LOGS, STDOUT

QUEUED = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
          "SUSPENDED", "STOPPED")
SUSPENDED = ("SUSPENDED", "STOPPED")  # paused where it runs: it goes on, no new start
RUNNING = ("RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING")
# the job's command runs: an exit file there is this run's, read once Slurm ends the job a moment
# later, or a requeued job's first run's (Slurm signals the trainer before its wrapper, which may
# then write "143 TOKEN"), which the same job with the same token must not be ended by
RUNS = ("RUNNING", "RESIZING")
# ended by Slurm or its node, not by the trial: the retry resumes it from its latest.pt (on the
# shared file system); NODE_FAIL: the host died under it
RESUMABLE = ("TIMEOUT", "PREEMPTED", "NODE_FAIL")
RESTARTS = "slurm_restarts.json"  # written by a requeued job: its token and SLURM_RESTART_COUNT


@dataclass
class Progress:
    exit_code: int | None  # from this attempt's exit_code file
    log_size: int
    out_size: int
    new_log: str
    restarts: int = 0  # how often Slurm requeued this attempt's job, as the job wrote it


def restarts_of(run_dir: Path, token: str) -> int:
    try:
        data = json.loads((run_dir / RESTARTS).read_text())
    except (OSError, ValueError):
        return 0
    return int(data.get("restarts") or 0) if isinstance(data, dict) and data.get("token") == token else 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_progress(run_dir: Path, offset: int, token: str, limit: int = 1 << 20) -> Progress:
    exit_code = exit_code_of(run_dir, token)
    new_log = ""
    try:
        with open(run_dir / LOGS, "rb") as f:
            f.seek(offset)
            new_log = f.read(limit).decode(errors="replace")
    except OSError:
        pass
    return Progress(exit_code, _size(run_dir / LOGS), _size(run_dir / STDOUT), new_log,
                    restarts_of(run_dir, token))


def slurm_status(job_id: str | None, state: str | None, reason: str, p: Progress) -> JobStatus:
    """One trial's JobStatus from Slurm's state of its job (None: Slurm does not know it)."""
    status = JobStatus("running", log_size=p.log_size, out_size=p.out_size, new_log=p.new_log,
                       restarts=p.restarts)
    if job_id is None:
        status.state = "absent"  # never submitted (or submitted and forgotten without a trace)
    elif state in QUEUED:
        status.state, status.reason = "queued", reason if reason and reason != "None" else state.lower()
        status.requeued = state not in SUSPENDED  # back in the queue (if it ran: requeued or preempted)
    elif state in RUNS or state in RUNNING and p.exit_code is None:
        pass
    elif state in RESUMABLE:
        status.state, status.exit_code, status.resume = "lost", p.exit_code, True
        status.reason = f"Slurm ended job {job_id} with {state}"
    elif p.exit_code is not None:
        status.state, status.exit_code = "exited", p.exit_code
        if state not in (None, "COMPLETED", *RUNNING):
            status.reason = f"Slurm ended job {job_id} with {state}"
    else:
        status.state = "lost"
        status.reason = (f"Slurm ended job {job_id} with {state}" if state else
                         f"Slurm no longer knows job {job_id}")
    return status
