"""Recovery: checking queues, jobs orphaned on hosts that went down, re-attaching on resume.

A job still on a host that went down is an *orphan*: its trial starts again on a live queue,
and the job is remembered (queue, attempt, handle with pid, start time and attempt token) in
its trial's ``orphans``. When the host answers again (a later poll, or ``--resume``) a live
orphan is stopped (its process group); a finished one gives the trial its result only when
the trial has not started anywhere else since; otherwise it is ignored. Nothing is fetched or
recorded from a job whose token is not the attempt's.

A start in doubt (its controller died during it, or it failed on the way) is settled through
the scheduler's ``revoke``: the attempt either started (the controller re-attaches to it) or
never will (it starts afresh); only a slot that cannot be asked leaves it in doubt, counted as
an attempt and remembered as an orphan until the slot answers.
"""
from __future__ import annotations

import time

from imf import drill
from imf.errors import BusyError, QueueError, SweepError
from imf.scheduler import Handle, JobStatus
from imf.sweep.engine_base import EngineBase
from imf.sweep.gpus import probe_queues
from imf.sweep.probe import queue_problems, refusal
from imf.sweep.state import ACTIVE, Orphan, QueueState, TrialState

ORPHAN_RETRY_S = 10.0  # how often a down host is asked about its orphans


class Recovery(EngineBase):
    # ------------------------------------------------------------------ queues
    def _check_queues(self) -> None:
        """``check`` each spec once (the slots of one spec share its answer)."""
        problems: dict[str, str] = {}  # spec -> why it cannot run jobs ("" when it can)
        for queue in self.state.live_queues():
            if queue.spec not in problems:
                try:
                    self.scheduler(queue.name).check()
                    problems[queue.spec] = ""
                except QueueError as exc:
                    problems[queue.spec] = str(exc)
            if problems[queue.spec]:
                self._queue_down(queue, problems[queue.spec])
        self._probe_gpus()

    def queues_down(self, only_plugins: bool = False) -> dict[str, str]:
        """Every queue whose spec's check fails -> why: the host answers and imports imf, and
        then every plugin the trials load (imf/sweep/probe.py; nothing is changed)."""
        return queue_problems(self.state, self.scheduler, reach=not only_plugins)

    def require_queues(self, down: dict[str, str]) -> None:
        """SweepError unless --min-queues (default: every queue) passed their checks."""
        why = refusal(self.state, down)
        if why:
            raise SweepError(why)

    def _probe_gpus(self, queues: list[QueueState] | None = None) -> None:
        """Probe the GPUs of the live GPU queues (one probe per host): a queue whose GPU is
        missing goes down, its trials to the live queues; the others learn their free memory."""
        for verdict in probe_queues(self.state.live_queues() if queues is None else queues, self.scheduler):
            queue = self.state.queue(verdict.queue)
            queue.gpu = verdict.device
            if verdict.found:
                self.log(f"queue {queue.name}: {verdict.text}")
            else:
                self._queue_down(queue, verdict.text)

    # ------------------------------------------------------------------ orphans
    def _resolve_orphans(self) -> None:
        """Stop, take or drop every orphan whose host answers (down hosts: every ORPHAN_RETRY_S)."""
        for trial in [t for t in self.state.trials if t.orphans]:
            for orphan in list(trial.orphans):
                queue = self.state.queue(orphan.queue)
                last = self.orphan_tried.get(queue.name)
                if queue.state != "live" and last is not None and time.monotonic() - last < ORPHAN_RETRY_S:
                    continue
                try:
                    self._resolve(trial, orphan)
                except QueueError:
                    self.orphan_tried[queue.name] = time.monotonic()  # still unreachable
                    continue
                trial.orphans.remove(orphan)
                self.save()

    def _resolve(self, trial: TrialState, orphan: Orphan) -> None:
        sch, handle = self.scheduler(orphan.queue), orphan.handle
        where = handle.where(orphan.queue)
        status = sch.poll(handle, 0)
        if status.state == "absent" and not handle.pid:  # a start in doubt
            settled = self._settled(orphan.queue, handle)
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

    def _unresolved_orphans(self) -> None:
        for trial in self.state.trials:
            for orphan in trial.orphans:
                self.log(f"the orphan of {trial.id} on {orphan.handle.where(orphan.queue)} "
                         f"is not resolved (its host does not answer); imf sweep --resume "
                         f"{self.sdir.path} stops it once the host is back")

    # ------------------------------------------------------------------ starts in doubt
    def _settled(self, queue: str, handle: Handle) -> JobStatus | None:
        """A start that may or may not have happened: None when attempt ``handle.token`` never
        runs (revoked now, if it had not started), else its status (it started after all).
        QueueError when the slot cannot be asked."""
        sch = self.scheduler(queue)
        revoked = sch.revoke(handle)
        drill.point("start-settled")
        return None if revoked else sch.poll(handle, 0)

    def _start_failed(self, trial: TrialState, queue: QueueState, exc: QueueError) -> JobStatus | None:
        """``start`` raised. A live job of another attempt refused it (that job is stopped before
        a retry); else the start may have happened on the way: revoked, or taken as started (its
        status returned), or, when the slot cannot be asked, an attempt in doubt."""
        if isinstance(exc, BusyError):
            trial.move("not started")
            self._orphan(trial, queue.name, exc.holder, trial.attempts)
            trial.handle = None
            self._contact_failed(queue, exc)
            return None
        try:
            status = self._settled(queue.name, trial.handle or Handle(queue.spec))
        except QueueError:
            status = None
            self._orphan(trial, queue.name, trial.handle, trial.attempts)  # stopped when it answers
            trial.note_attempt("start in doubt", str(exc))
            trial.move("requeued")
        else:
            if status is not None:
                self.log(f"{trial.id} started on {queue.name} although its start said: {exc}")
                return status
            trial.move("not started")
        trial.handle = None
        self._contact_failed(queue, exc)
        return None

    # ------------------------------------------------------------------ re-attaching
    def _reattach_all(self, states: tuple[str, ...] = ACTIVE) -> None:
        """Re-attach to the trials in ``states`` (on resume, every active one; later, the ones
        still ``starting`` because their slot did not answer)."""
        for trial in [t for t in self.state.trials if t.state in states]:
            queue = self.state.queue(trial.queue)
            sch = self.scheduler(queue.name)
            if trial.handle is None or not trial.handle.dir:  # sweeps of imf before handles held it
                job = self.job_request(trial)
                trial.handle = Handle(queue.spec, sch.job_dir(job), str(job.run_dir),
                                      trial.handle.token if trial.handle else "")
            revoked = False
            try:
                status = sch.poll(trial.handle, 0)  # by its folder, pid and start time
                if trial.state == "starting" and status.state == "absent" and trial.handle.token:
                    settled = self._settled(queue.name, trial.handle)  # a revoke names its attempt's token
                    status, revoked = settled or status, settled is None
            except QueueError as exc:
                self._contact_failed(queue, exc)
                if trial.state in ("queued", "running"):
                    trial.move("started")  # polled again (or moved when the queue goes down)
                continue  # one still starting is asked again at the next step
            self._adopt(trial, queue, status, revoked)
        self.save()

    def _adopt(self, trial: TrialState, queue: QueueState, status: JobStatus, revoked: bool = False) -> None:
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
            self._attempt_over(trial, "failed", None, "its folder or pid file disappeared")
            return
        trial.handle = trial.handle or Handle(queue.spec)
        trial.handle.pid, trial.handle.start_time = status.pid, status.start_time
        trial.move("started")
        trial.started_unix = trial.started_unix or time.time()
        self.stalls.restart(trial.id)
        self.log(f"re-attached {trial.id} on {queue.name} ({trial.handle.label()}, {status.state})")

