"""How an attempt of a trial ends, whoever saw it end: a retry while retries are left, else the
trial's end, saved and then recorded in the stores; a job the batch system put back in its queue
(a preemption: the same job runs again as the next attempt); and a job left behind on a queue
(an orphan, remembered until its host answers).

The watcher, queue health, the starter and recovery all end attempts through ``Outcomes``, so
one attempt's end is counted, logged, saved and recorded the same way wherever it was seen.
"""
from __future__ import annotations

from imf import drill
from imf.clock import now_iso
from imf.errors import ImfError
from imf.report import IMF
from imf.scheduler import Handle, JobStatus
from imf.sweep.context import Part
from imf.sweep.finish import record_trial
from imf.sweep.state import Orphan, TrialState

RETRIED = ("failed", "stalled", "timeout", "lost")  # timeout: ended by a batch system's time limit
LOST = ("lost", "queue down", "orphan killed", "orphan ignored")  # its job vanished, or its host went down


class Outcomes(Part):
    """Ends attempts: retries, ends and records trials, notes preemptions and orphans."""

    def attempt_over(self, trial: TrialState, outcome: str, exit_code: int | None, reason: str) -> None:
        """The current attempt ended with ``outcome``: a retry when one is left, else the end."""
        trial.note_attempt(outcome, reason, exit_code)
        trial.exit_code, trial.reason = exit_code, reason
        self.stalls.forget(trial.id)
        failures = sum(h["outcome"] in RETRIED for h in trial.since_rerun())  # a rerun's retries anew
        if outcome in RETRIED and failures <= self.state.retries:
            trial.move("retry")
            orders = [t.order for t in self.state.trials if t.queue == trial.queue]
            trial.order = min(orders) - 1  # a retry goes first on its queue
            self.log(f"{outcome} {trial.id}: {reason}; retry {failures}/{self.state.retries}")
        else:
            trial.move("ended", "failed" if outcome in ("timeout", "lost") else outcome)
            trial.finished = now_iso()
            terms = self.ctx.metric_of.get(trial.id, IMF)  # a program's metric as written, else imf's score
            score = "" if trial.best_score is None else \
                f", best {terms.name + ' ' if terms.program else ''}{terms.value(trial.best_score):.4f}"
            self.log(f"{outcome} {trial.id} after {trial.attempts} attempt(s){score}"
                     + (f": {reason}" if reason else ""))
            # The end first: a controller killed while recording finds the trial ended (not
            # recorded) on resume, records it then, and never looks at its job again.
            self.save()
            drill.point("ended-saved")
            self.record(trial)
            drill.point("recorded")
        drill.point("attempt-noted")
        self.save()

    @staticmethod
    def note_requeue(trial: TrialState, status: JobStatus) -> str | None:
        """Why its job is a new run of the same job since the last poll, or None: seen waiting in
        the batch queue again, or, where a poll missed that (a busy controller, a quick restart),
        told by the job's restart count. Counts the restart in ``trial.restarts_seen``, once."""
        if status.state == "queued" and status.requeued and trial.log_offset:
            trial.restarts_seen += 1
            return status.reason
        if status.restarts > trial.restarts_seen:
            trial.restarts_seen = status.restarts
            return status.reason or f"restart {status.restarts}, seen after it ran again"
        return None

    def preempted(self, trial: TrialState, why: str) -> None:
        """The batch system put the running job back in its queue (``scontrol requeue``, a
        preemption with PreemptMode=REQUEUE): the attempt ended, the same job runs again as the
        next attempt (same token), resuming from its latest.pt; its log is read again from the
        start (the resume cuts what came after that checkpoint)."""
        reason = f"{trial.handle.label() if trial.handle else 'its job'} was requeued ({why})"
        trial.note_attempt("preempted", f"{reason}; it resumes from its latest checkpoint")
        trial.move("preempted")
        trial.started, trial.started_unix, trial.log_offset, trial.epoch = now_iso(), None, 0, 0
        trial.last_score = trial.best_score = trial.best_success = None
        self.stalls.restart(trial.id)
        self.log(f"preempted {trial.id}: {reason}; attempt {trial.attempts} resumes it from its latest checkpoint")
        self.save()

    def record(self, trial: TrialState) -> None:
        """Record an ended trial in the sweep's stores; ``trial.recorded`` says whether it worked."""
        try:
            problems = record_trial(trial, self.state, self.sdir.path)
        except (ImfError, ImportError, OSError, ValueError, KeyError) as exc:
            problems = [f"{type(exc).__name__}: {exc}"]
        for problem in problems:
            self.log(f"could not record {trial.id}: {problem}")
        trial.recorded = not problems

    def orphan(self, trial: TrialState, queue: str, handle: Handle | None, attempt: int) -> None:
        """Remember a job of ``trial`` that may still run on ``queue`` (once per token)."""
        if handle is None or not handle.dir or not (handle.token or handle.pid):
            return
        if any(o.handle.token == handle.token and o.queue == queue for o in trial.orphans):
            return
        trial.orphans.append(Orphan(queue, Handle.from_dict(handle.to_dict()), attempt, now_iso()))
        if handle.pid:  # else a start that failed: looked at once, in case it ran after all
            self.log(f"orphaned {trial.id} on {handle.where(queue)}")
