"""Recovery half of the sweep engine: queues that go down, jobs orphaned on them, re-attaching.

A job still on a host that went down is an *orphan*: its trial starts again on a live queue,
and the job is remembered (queue, attempt, handle with pid, start time and attempt token) in
its trial's ``orphans``. When the host answers again (a later poll, or ``--resume``) a live
orphan is stopped (its process group); a finished one gives the trial its result only when
the trial has not started anywhere else since; otherwise it is ignored. Nothing is fetched or
recorded from a job whose token is not the attempt's.
"""
from __future__ import annotations

import time
from typing import Any

from imf.errors import QueueError
from imf.scheduler.base import JobStatus
from imf.sweep.halving import Halving
from imf.sweep.plan import assign
from imf.sweep.state import ACTIVE, FINAL, QueueState, TrialState, now_iso

DOWN_AFTER = 3  # consecutive failed contacts with a queue's machine before it is marked down
ORPHAN_RETRY_S = 10.0  # how often a down host is asked about its orphans


class Recovery:
    """Mixed into ``Engine``; uses its state, schedulers, log and save."""

    orphan_tried: dict[str, float]
    halving: Halving

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
                self._orphan(trial, queue.name, trial.handle or {}, trial.attempts)
                self._attempt_over(trial, "stopped_early", None, halted)
                continue
            if trial.state in ACTIVE:
                self._orphan(trial, queue.name, trial.handle or {}, trial.attempts)
                self.log(f"{trial.id} was running on {queue.name}; it starts again on a live queue")
                trial.note_attempt("queue down", reason, queue=queue.name)
                trial.handle = None
                self.seen.pop(trial.id, None)
            trial.state = "pending"
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

    # ------------------------------------------------------------------ orphans
    def _orphan(self, trial: TrialState, queue: str, handle: dict[str, Any], attempt: int) -> None:
        """Remember a job of ``trial`` that may still run on ``queue`` (once per token)."""
        if not handle.get("dir") or not (handle.get("token") or handle.get("pid")):
            return
        if any(o["handle"].get("token") == handle.get("token") and o["queue"] == queue
               for o in trial.orphans):
            return
        trial.orphans.append({"queue": queue, "attempt": attempt, "handle": dict(handle),
                              "since": now_iso()})
        if handle.get("pid"):  # else a start that failed: looked at once, in case it ran after all
            self.log(f"orphaned {trial.id} on {_where(queue, handle)}")

    def _resolve_orphans(self) -> None:
        """Stop, take or drop every orphan whose host answers (down hosts: every ORPHAN_RETRY_S)."""
        for trial in [t for t in self.state.trials if t.orphans]:
            for orphan in list(trial.orphans):
                queue = self.state.queue(orphan["queue"])
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

    def _resolve(self, trial: TrialState, orphan: dict[str, Any]) -> None:
        sch, handle = self.scheduler(orphan["queue"]), orphan["handle"]
        where = _where(orphan["queue"], handle)
        status = sch.poll(handle, 0)
        if status.state == "absent" and not handle.get("pid"):
            return  # a start that failed left nothing
        stopped = status.state in ("queued", "running")
        if stopped:
            sch.stop(handle)
            # it may have ended on its own between the poll and the stop: then its result counts
            status = sch.poll(handle, 0)
        if stopped and not (status.state == "exited" and status.exit_code == 0):
            self.log(f"killed the orphan of {trial.id} on {where}")
            outcome = "orphan killed"
        elif status.state == "exited" and status.exit_code == 0 and trial.state == "pending":
            trial.queue, trial.state, trial.handle = orphan["queue"], "running", dict(handle)
            trial.log_offset, trial.epoch, trial.started_unix = 0, 0, None
            self.seen[trial.id] = ((-1, -1), time.monotonic())
            self.log(f"{trial.id} takes the result of its orphan on {where} (it ended with exit 0)")
            return
        else:
            ended = "is gone" if status.state == "absent" else f"ended ({status.state}, exit {status.exit_code})"
            self.log(f"the orphan of {trial.id} on {where} {ended}; it is ignored: "
                     f"{trial.id} is {trial.state} elsewhere")
            outcome = "orphan ignored"
        trial.note_attempt(outcome, where, status.exit_code, attempt=orphan["attempt"],
                           queue=orphan["queue"], handle=handle)

    def _unresolved_orphans(self) -> None:
        for trial in self.state.trials:
            for orphan in trial.orphans:
                self.log(f"the orphan of {trial.id} on {_where(orphan['queue'], orphan['handle'])} "
                         f"is not resolved (its host does not answer); imf sweep --resume "
                         f"{self.sdir.path} stops it once the host is back")

    # ------------------------------------------------------------------ re-attaching
    def _reattach_all(self) -> None:
        for trial in [t for t in self.state.trials if t.state in ACTIVE]:
            queue = self.state.queue(trial.queue)
            sch = self.scheduler(queue.name)
            if not (trial.handle or {}).get("dir"):  # sweeps written before handles held the dir
                job = self.job(trial)
                trial.handle = {"queue": queue.spec, "dir": sch.job_dir(job), "local_dir": str(job.run_dir),
                                "pid": None, "start_time": None, "token": (trial.handle or {}).get("token", "")}
            try:
                status = sch.poll(trial.handle, 0)  # by its folder, pid and start time
            except QueueError as exc:
                self._contact_failed(queue, exc)
                trial.state = "running"  # polled again (or moved when the queue goes down)
                continue
            self._adopt(trial, queue, status)
        self.save()

    def _adopt(self, trial: TrialState, queue: QueueState, status: JobStatus) -> None:
        previous = trial.history[-1].get("pid") if trial.history else None
        legacy = not (trial.handle or {}).get("token")  # no token: the pid tells attempts apart
        never_started = status.state == "absent" or (
            legacy and trial.state == "starting" and status.pid is not None and status.pid == previous)
        if never_started and trial.state == "starting":
            trial.state, trial.handle = "pending", None
            trial.attempts -= 1
            self.log(f"{trial.id} had not started when the controller stopped; it starts normally")
            return
        if never_started:
            self._attempt_over(trial, "failed", None, "its folder or pid file disappeared")
            return
        trial.handle = {**(trial.handle or {}), "pid": status.pid, "start_time": status.start_time}
        trial.state = "running"
        trial.started_unix = trial.started_unix or time.time()
        self.seen[trial.id] = ((-1, -1), time.monotonic())
        self.log(f"re-attached {trial.id} on {queue.name} ({job_label(trial.handle)}, {status.state})")


def job_label(handle: dict[str, Any]) -> str:
    """The job in log lines: job ID (a batch job) or pid PID."""
    return f"job {handle['job_id']}" if handle.get("job_id") else f"pid {handle.get('pid')}"


def _where(queue: str, handle: dict[str, Any]) -> str:
    return (f"{handle.get('host') or queue} (pid {handle.get('pid')}, "
            f"token {handle.get('token') or '-'})")
