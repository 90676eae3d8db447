"""Recovery: jobs orphaned on hosts that went down, and re-attaching to running trials on resume.

A job still on a host that went down is an *orphan*: its trial starts again on a live queue,
and the job is remembered (queue, attempt, handle with pid, start time and attempt token) in
its trial's ``orphans``. When the host answers again (a later poll, or ``--resume``) a live
orphan is stopped (its process group); a finished one gives the trial its result only when
the trial has not started anywhere else since; otherwise it is ignored. Nothing is fetched or
recorded from a job whose token is not the attempt's.

On resume every active trial is re-attached by its folder, pid and start time; one still
``starting`` when its controller stopped is settled through the starter (starter.py): it
started after all, or it never will and starts normally.
"""
from __future__ import annotations

import time

from imf.errors import QueueError
from imf.scheduler import Handle, JobStatus
from imf.sweep.context import Part, SweepContext
from imf.sweep.outcomes import Outcomes
from imf.sweep.queue_health import QueueHealth
from imf.sweep.starter import Starter
from imf.sweep.state import ACTIVE, Orphan, QueueState, TrialState

ORPHAN_RETRY_S = 10.0  # how often a down host is asked about its orphans


class Recovery(Part):
    """Resolves orphans and re-attaches to the trials a stopped controller left running."""

    def __init__(self, ctx: SweepContext, outcomes: Outcomes, queues: QueueHealth, starter: Starter):
        super().__init__(ctx)
        self.outcomes, self.queues, self.starter = outcomes, queues, starter

    # ------------------------------------------------------------------ orphans
    def resolve_orphans(self) -> None:
        """Stop, take or drop every orphan whose host answers (down hosts: every ORPHAN_RETRY_S)."""
        tried = self.ctx.orphan_tried
        for trial in [t for t in self.state.trials if t.orphans]:
            for orphan in list(trial.orphans):
                queue = self.state.queue(orphan.queue)
                last = tried.get(queue.name)
                if queue.state != "live" and last is not None and time.monotonic() - last < ORPHAN_RETRY_S:
                    continue
                try:
                    self.resolve(trial, orphan)
                except QueueError:
                    tried[queue.name] = time.monotonic()  # still unreachable
                    continue
                trial.orphans.remove(orphan)
                self.save()

    def resolve(self, trial: TrialState, orphan: Orphan) -> None:
        """Stop ``orphan``, or give its trial its result, or ignore it; noted in the trial."""
        sch, handle = self.scheduler(orphan.queue), orphan.handle
        where = handle.where(orphan.queue)
        status = sch.poll(handle, 0)
        if status.state == "absent" and not handle.pid:  # a start in doubt
            settled = self.starter.settled(orphan.queue, handle)
            if settled is None:
                return  # it never ran, and now never will
            status = settled
        stopped = status.state in ("queued", "running")
        if stopped:
            sch.stop(handle)
            # it may have ended on its own between the poll and the stop: then its result counts
            status = sch.poll(handle, 0)
        if stopped and not (status.state == "exited" and status.exit_code == 0):
            self.log(f"killed the orphan of {trial.id} on {where}")
            outcome = "orphan killed"
        elif status.state == "exited" and status.exit_code == 0 and trial.state == "pending":
            trial.move("orphan result")
            trial.queue, trial.handle = orphan.queue, handle
            trial.log_offset, trial.epoch, trial.started_unix = 0, 0, None
            self.stalls.restart(trial.id)
            self.log(f"{trial.id} takes the result of its orphan on {where} (it ended with exit 0)")
            return
        else:
            ended = "is gone" if status.state == "absent" else f"ended ({status.state}, exit {status.exit_code})"
            self.log(f"the orphan of {trial.id} on {where} {ended}; it is ignored: "
                     f"{trial.id} is {trial.state} elsewhere")
            outcome = "orphan ignored"
        trial.note_attempt(outcome, where, status.exit_code, attempt=orphan.attempt,
                           queue=orphan.queue, handle=handle)

    def unresolved_orphans(self) -> None:
        """Log every orphan still waiting for its host (at the sweep's end)."""
        for trial in self.state.trials:
            for orphan in trial.orphans:
                self.log(f"the orphan of {trial.id} on {orphan.handle.where(orphan.queue)} "
                         f"is not resolved (its host does not answer); imf sweep --resume "
                         f"{self.sdir.path} stops it once the host is back")

    # ------------------------------------------------------------------ re-attaching
    def complete_old_handles(self) -> None:
        """Once, on resume: a sweep.json of an imf before handles held the job's folder gets each
        active trial's folder from its scheduler (the file's own upgrade cannot: the folder is the
        scheduler's to name), and the log says so; re-attaching then reads every handle alike."""
        old = [t for t in self.state.trials if t.state in ACTIVE and (t.handle is None or not t.handle.dir)]
        for trial in old:
            queue = self.state.queue(trial.queue)
            job = self.starter.job_request(trial)
            trial.handle = Handle(queue.spec, self.scheduler(queue.name).job_dir(job), str(job.run_dir),
                                  trial.handle.token if trial.handle else "")
            self.log(f"{trial.id}: a handle saved by an imf before handles held the job's folder; "
                     f"its folder is {trial.handle.dir}")
        if old:
            self.save()

    def reattach_all(self, states: tuple[str, ...] = ACTIVE) -> None:
        """Re-attach to the trials in ``states`` (on resume, every active one; later, the ones
        still ``starting`` because their slot did not answer)."""
        for trial in [t for t in self.state.trials if t.state in states]:
            queue = self.state.queue(trial.queue)
            sch = self.scheduler(queue.name)
            revoked = False
            try:
                status = sch.poll(trial.handle, 0)  # by its folder, pid and start time
                if trial.state == "starting" and status.state == "absent" and trial.handle.token:
                    settled = self.starter.settled(queue.name, trial.handle)  # a revoke names its attempt's token
                    status, revoked = settled or status, settled is None
            except QueueError as exc:
                self.queues.contact_failed(queue, exc)
                if trial.state in ("queued", "running"):
                    trial.move("started")  # polled again (or moved when the queue goes down)
                continue  # one still starting is asked again at the next step
            self.adopt(trial, queue, status, revoked)
        self.save()

    def adopt(self, trial: TrialState, queue: QueueState, status: JobStatus, revoked: bool = False) -> None:
        """Take ``trial``'s job as found on resume: running on, never started, or gone."""
        stale, trial.stale_pid = trial.stale_pid, None  # a pid known to be an earlier attempt's
        never_started = status.state == "absent" or (
            trial.state == "starting" and status.pid is not None and status.pid == stale)
        if never_started and trial.state == "starting":
            trial.move("not started")
            trial.handle = None
            self.log(f"{trial.id} had not started when the controller stopped"
                     + ("; its start is revoked" if revoked else "") + "; it starts normally")
            return
        if never_started:
            self.outcomes.attempt_over(trial, "failed", None, "its folder or pid file disappeared")
            return
        trial.handle = trial.handle or Handle(queue.spec)
        trial.handle.pid, trial.handle.start_time = status.pid, status.start_time
        trial.move("started")
        trial.started_unix = trial.started_unix or time.time()
        self.stalls.restart(trial.id)
        self.log(f"re-attached {trial.id} on {queue.name} ({trial.handle.label()}, {status.state})")
