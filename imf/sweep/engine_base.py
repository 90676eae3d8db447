"""What every part of the sweep engine shares: its state, its schedulers, and the outcomes.

``EngineBase`` holds the sweep's state and the per-controller bookkeeping (contact failures,
log growth, orphan retries) and makes the changes that both the queue loop (engine.py) and
recovery (recovery.py) need: an attempt that ended, a queue that went down, a job left behind.
A trial's state changes only through ``TrialState.move`` (the transitions of state.py).
"""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from imf import drill
from imf.clock import now_iso
from imf.errors import ImfError
from imf.report import IMF, Terms
from imf.scheduler import Handle, JobRequest, JobStatus, Scheduler, new_token, scheduler_for
from imf.sweep.finish import record_trial
from imf.sweep.halving import Halving
from imf.sweep.plan import assign
from imf.sweep.folder import SweepDir, config_text
from imf.sweep.stall import StallWatch
from imf.sweep.state import ACTIVE, FINAL, Orphan, QueueState, SweepState, TrialState

DOWN_AFTER = 3  # consecutive failed contacts with a queue's machine before it is marked down
RETRIED = ("failed", "stalled", "timeout", "lost")  # timeout: ended by a batch system's time limit
LOST = ("lost", "queue down", "orphan killed", "orphan ignored")  # its job vanished, or its host went down


class EngineBase:
    def __init__(self, sdir: SweepDir, state: SweepState, echo: Callable[[str], None] = print,
                 sleep: Callable[[float], None] = time.sleep):
        self.sdir, self.state, self.echo, self.sleep = sdir, state, echo, sleep
        self.schedulers: dict[str, Scheduler] = {}
        self.failures: Counter[str] = Counter()  # queue -> failed contacts in a row
        self.stalls = StallWatch()  # when each running trial's files last grew
        self.orphan_tried: dict[str, float] = {}  # down queue -> when its orphans were last asked
        self.report_path: Path | None = None
        self.report_text: str | None = None
        self._written = ""
        self.halving = Halving(state)  # successive halving's scores and decisions (or none)
        self.metric_of: dict[str, Terms] = {}  # trial id -> a program's metric, for its end's line
        # every token sweep.json holds, read before recovery drops any: a new one is later
        handles = [h for t in state.trials for h in [t.handle, *(o.handle for o in t.orphans)] if h]
        self._newest_token = new_token([h.token for h in handles if h.token])

    # ------------------------------------------------------------------ plumbing
    def log(self, message: str) -> None:
        self.echo(self.sdir.log(message))

    def save(self) -> None:
        text = json.dumps(self.state.to_dict(), sort_keys=True)
        if text != self._written:
            self.sdir.save(self.state)
            self._written = text

    def scheduler(self, queue: str) -> Scheduler:
        if queue not in self.schedulers:
            q = self.state.queue(queue)
            self.schedulers[queue] = scheduler_for(q.spec, q.options)
        return self.schedulers[queue]

    def job_request(self, trial: TrialState) -> JobRequest:
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

    # ------------------------------------------------------------------ attempts
    def _attempt_over(self, trial: TrialState, outcome: str, exit_code: int | None, reason: str) -> None:
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
            terms = self.metric_of.get(trial.id, IMF)  # a program's metric as written, else imf's score
            score = "" if trial.best_score is None else \
                f", best {terms.name + ' ' if terms.program else ''}{terms.value(trial.best_score):.4f}"
            self.log(f"{outcome} {trial.id} after {trial.attempts} attempt(s){score}"
                     + (f": {reason}" if reason else ""))
            # The end first: a controller killed while recording finds the trial ended (not
            # recorded) on resume, records it then, and never looks at its job again.
            self.save()
            drill.point("ended-saved")
            self._record(trial)
            drill.point("recorded")
        drill.point("attempt-noted")
        self.save()

    @staticmethod
    def _note_requeue(trial: TrialState, status: JobStatus) -> str | None:
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

    def _preempted(self, trial: TrialState, why: str) -> None:
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

    def _next_token(self) -> str:
        """A new attempt's token, later than every token this sweep made or held."""
        self._newest_token = new_token([self._newest_token])
        return self._newest_token

    def _record(self, trial: TrialState) -> None:
        try:
            problems = record_trial(trial, self.state, self.sdir.path)
        except (ImfError, ImportError, OSError, ValueError, KeyError) as exc:
            problems = [f"{type(exc).__name__}: {exc}"]
        for problem in problems:
            self.log(f"could not record {trial.id}: {problem}")
        trial.recorded = not problems

    # ------------------------------------------------------------------ queues
    def _contact_failed(self, queue: QueueState, exc: Exception) -> None:
        self.failures[queue.name] += 1
        self.log(f"queue {queue.name}: {exc} ({self.failures[queue.name]}/{DOWN_AFTER})")
        active = any(t.queue == queue.name and t.state in ACTIVE for t in self.state.trials)
        if queue.state == "live" and self.failures[queue.name] >= DOWN_AFTER or \
                queue.state == "down" and active:  # an orphan taken back, lost again
            self._queue_down(queue, str(exc))

    def _queue_down(self, queue: QueueState, reason: str, state: str = "down") -> None:
        """Mark ``queue`` down (or blocked: its machine answers, but cannot take work) and move
        its trials (waiting or lost with it) to live queues."""
        queue.state, queue.reason = state, reason
        self.log(f"queue {queue.name} is {state}: {reason}"
                 + ("; its trials wait for a live queue, their retries kept; free space and continue "
                    "with imf sweep --resume" if state == "blocked" else ""))
        moved = [t for t in self.state.trials if t.queue == queue.name and t.state not in FINAL]
        for trial in moved:
            halted = self.halving.stopped(trial) if trial.state in ACTIVE else None
            if halted:  # a stop decided at a rung: the job is an orphan, the trial never runs again
                self._orphan(trial, queue.name, trial.handle, trial.attempts)
                self._attempt_over(trial, "stopped_early", None, halted)
                continue
            if trial.state in ACTIVE:
                self._orphan(trial, queue.name, trial.handle, trial.attempts)
                self.log(f"{trial.id} was running on {queue.name}; it starts again on a live queue")
                trial.note_attempt("queue down", reason, queue=queue.name)
                trial.handle = None
                self.stalls.forget(trial.id)
            trial.move("requeued")
        live = self.state.live_queues()
        moved = [t for t in moved if t.state == "pending"]
        if moved and live:
            self._reassign(moved, live)
        self.save()

    def _reassign(self, moved: list[TrialState], live: list[QueueState]) -> None:
        loads = {q.name: sum(t.cost for t in self.state.trials if t.queue == q.name
                             and t.state not in FINAL) / q.speed for q in live}
        order = assign({t.id: t.cost for t in moved}, {q.name: q.speed for q in live}, loads)
        for name, ids in order.items():
            last = max([t.order for t in self.state.trials if t.queue == name], default=0)
            for i, tid in enumerate(ids):
                trial = self.state.trial(tid)
                trial.queue, trial.order = name, last + 1 + i
            if ids:
                self.log(f"moved {', '.join(ids)} to {name}")

    def _orphan(self, trial: TrialState, queue: str, handle: Handle | None, attempt: int) -> None:
        """Remember a job of ``trial`` that may still run on ``queue`` (once per token)."""
        if handle is None or not handle.dir or not (handle.token or handle.pid):
            return
        if any(o.handle.token == handle.token and o.queue == queue for o in trial.orphans):
            return
        trial.orphans.append(Orphan(queue, Handle.from_dict(handle.to_dict()), attempt, now_iso()))
        if handle.pid:  # else a start that failed: looked at once, in case it ran after all
            self.log(f"orphaned {trial.id} on {handle.where(queue)}")
