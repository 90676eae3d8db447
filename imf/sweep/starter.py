"""Starting trials: the job a trial's attempt runs (its command line and folders), the token
that names the attempt, which trial a free slot takes (its queue's next, or one taken from the
busiest queue), the start itself, and a start that failed or is in doubt.

The trial is saved as ``starting`` with its handle before its process exists, so a controller
killed during a start finds it on resume. A start in doubt (it failed on the way, or its
controller died during it) is settled through the scheduler's ``revoke``: the attempt either
started (it is taken as started) or never will (it starts afresh); only a slot that cannot be
asked leaves it in doubt, counted as an attempt and remembered as an orphan until it answers.
"""
from __future__ import annotations

import time

from imf import drill
from imf.clock import now_iso
from imf.errors import BusyError, FolderInUseError, QueueError
from imf.scheduler import Handle, JobRequest, JobStatus, new_token
from imf.sweep.context import Part, SweepContext
from imf.sweep.folder import config_text
from imf.sweep.outcomes import LOST, Outcomes
from imf.sweep.queue_health import QueueHealth
from imf.sweep.state import QueueState, TrialState


class Starter(Part):
    """Builds each attempt's job and starts it on a free slot."""

    def __init__(self, ctx: SweepContext, outcomes: Outcomes, queues: QueueHealth):
        super().__init__(ctx)
        self.outcomes, self.queues = outcomes, queues

    def job_request(self, trial: TrialState) -> JobRequest:
        """The job of ``trial``'s next attempt: ``imf trial`` with the sweep's and its own settings."""
        s = self.state
        # A GPU slot's trial trains on that GPU or fails loudly (never on the CPU by "auto");
        # the user's own training.device override comes later and wins.
        device = ["training.device=cuda"] if self.scheduler(trial.queue).gpu is not None else []
        argv = [*s.trial_command, "{config}", "--id", trial.id, "--out", "{run_dir}",
                "--seed", str(trial.seed), "--store", "none",
                *(["--epochs", str(trial.epochs)] if trial.epochs else []),  # 0: a program's trial
                f"sweep.name={s.name}",  # the SwanLab group of every trial of this sweep
                *device, *s.overrides, *trial.overrides,
                *(["--init-from", trial.init_from] if trial.init_from else []),
                *(["--final-eval", str(s.final_eval)] if s.final_eval else [])]
        config = trial.config or s.config
        job = JobRequest(trial.id, s.name, self.sdir.trial_dir(trial.id), argv, config, config_text(config))
        job.resume_argv = [*s.trial_command, "--resume", "--id", trial.id, "--out", "{run_dir}",
                           "--store", "none", *(["--final-eval", str(s.final_eval)] if s.final_eval else [])]
        since = trial.since_rerun()  # a rerun starts afresh
        last = since[-1].get("outcome") if since else None
        job.resume = last == "timeout" or (last in LOST and self.scheduler(trial.queue).resumes_lost_jobs)
        return job

    def next_token(self) -> str:
        """A new attempt's token, later than every token this sweep made or held."""
        self.ctx.newest_token = new_token([self.ctx.newest_token])
        return self.ctx.newest_token

    def steal_for(self, idle: QueueState) -> TrialState | None:
        """An idle queue takes the last waiting trial of the busiest live queue when it would
        finish it no later than that queue could (the plan's costs are only estimates)."""
        best: tuple[float, TrialState] | None = None
        for queue in self.state.live_queues():
            waiting = self.state.pending_on(queue.name) if queue.name != idle.name else []
            # An out-of-memory retry waits for the bigger GPU it was sent to.
            movable = [t for t in waiting if not _waits_for_memory(t)]
            if not movable:
                continue
            # The donor still has its running trial to finish: this is a lower bound of its wait.
            donor_finish = sum(t.cost for t in waiting) / queue.speed
            last = movable[-1]
            if last.cost / idle.speed <= donor_finish and (best is None or donor_finish > best[0]):
                best = (donor_finish, last)
        if best is None:
            return None
        trial = best[1]
        self.log(f"moved {trial.id} from {trial.queue} to idle {idle.name}")
        trial.queue = idle.name
        trial.order = max([t.order for t in self.state.trials if t.queue == idle.name], default=0) + 1
        return trial

    def launch(self, trial: TrialState, queue: QueueState) -> None:
        """Start ``trial``'s next attempt on ``queue``."""
        job, sch = self.job_request(trial), self.scheduler(queue.name)
        job.token = self.next_token()  # names this attempt in its claim, pid and exit files
        trial.move("launch")
        trial.reason = ""
        trial.handle = Handle(queue.spec, sch.job_dir(job), str(job.run_dir), job.token)
        self.save()  # before the process exists: a resume then looks before starting again
        drill.point("launch-saved")
        try:
            handle = sch.start(job)
        except FolderInUseError as exc:  # someone else's trial: never stopped, this attempt fails
            self.outcomes.attempt_over(trial, "failed", None, str(exc))
            return
        except QueueError as exc:
            status = self.start_failed(trial, queue, exc)
            if status is None:
                return
            handle = trial.handle or Handle(queue.spec)  # it started after all
            handle.pid, handle.start_time = status.pid, status.start_time
        drill.point("job-started")
        self.queues.contact_ok(queue)
        trial.handle = handle
        trial.move("started")
        trial.started, trial.started_unix, trial.finished = now_iso(), time.time(), None
        trial.log_offset, trial.epoch, trial.last_score, trial.best_score = 0, 0, None, None
        trial.best_success = None
        trial.val_mse = None
        self.stalls.restart(trial.id)
        self.log(f"start {trial.id} on {queue.name} (attempt {trial.attempts}, {handle.label()})"
                 + (", resuming from its latest checkpoint" if job.resume else ""))
        self.save()
        drill.point("start-saved")

    def settled(self, queue: str, handle: Handle) -> JobStatus | None:
        """A start that may or may not have happened: None when attempt ``handle.token`` never
        runs (revoked now, if it had not started), else its status (it started after all).
        QueueError when the slot cannot be asked."""
        sch = self.scheduler(queue)
        revoked = sch.revoke(handle)
        drill.point("start-settled")
        return None if revoked else sch.poll(handle, 0)

    def start_failed(self, trial: TrialState, queue: QueueState, exc: QueueError) -> JobStatus | None:
        """``start`` raised. A live job of another attempt refused it (that job is stopped before
        a retry); else the start may have happened on the way: revoked, or taken as started (its
        status returned), or, when the slot cannot be asked, an attempt in doubt."""
        if isinstance(exc, BusyError):
            trial.move("not started")
            self.outcomes.orphan(trial, queue.name, exc.holder, trial.attempts)
            trial.handle = None
            self.queues.contact_failed(queue, exc)
            return None
        try:
            status = self.settled(queue.name, trial.handle or Handle(queue.spec))
        except QueueError:
            status = None
            self.outcomes.orphan(trial, queue.name, trial.handle, trial.attempts)  # stopped when it answers
            trial.note_attempt("start in doubt", str(exc))
            trial.move("requeued")
        else:
            if status is not None:
                self.log(f"{trial.id} started on {queue.name} although its start said: {exc}")
                return status
            trial.move("not started")
        trial.handle = None
        self.queues.contact_failed(queue, exc)
        return None


def _waits_for_memory(trial: TrialState) -> bool:
    """Its last attempt ran out of GPU memory: it was sent to a queue with more free memory."""
    return bool(trial.history) and trial.history[-1].get("outcome") == "out of memory"
