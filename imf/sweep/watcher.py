"""Watching running trials: one poll of every running job (slots of one batch key asked
together), the progress its new log lines show, and what its end or silence means.

A job may be back in its batch queue (a preemption), waiting, progressing, stopped at a halving
rung, stalled (no growth of its logs for ``--stall-timeout``), gone, or ended. An end is read
from its exit code and summary.json: a good end, a time limit (a retry resumes it), a full disk
or a slot without CUDA (the queue goes down, the trial waits with its retries kept), out of GPU
memory (retried once on a GPU with more free memory), a lost job, or a failure.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from imf import drill
from imf.clock import now_iso
from imf.errors import EXIT_DISK_FULL, EXIT_GPU_OOM, EXIT_NO_CUDA, OUTCOME_EXIT, QueueError
from imf.report import summary_terms
from imf.scheduler import Handle, JobStatus, Scheduler
from imf.store import PROGRAM_SCORE, STDOUT, first_number, is_epoch_row, parse_log, read_summary, row_score, row_success
from imf.sweep.context import Part, SweepContext
from imf.sweep.gpus import free_mib
from imf.sweep.outcomes import Outcomes
from imf.sweep.queue_health import QueueHealth
from imf.sweep.state import TrialState

GOOD_ENDS = ("completed", "stopped_early", "diverged")


class Watcher(Part):
    """Polls the running trials and turns what their jobs show into progress and outcomes."""

    def __init__(self, ctx: SweepContext, outcomes: Outcomes, queues: QueueHealth):
        super().__init__(ctx)
        self.outcomes, self.queues = outcomes, queues

    def poll(self, trials: list[TrialState]) -> list[JobStatus | QueueError]:
        """Every trial's status; slots of one batch key are asked together (one squeue)."""
        groups: dict[Any, list[TrialState]] = {}
        for trial in trials:
            groups.setdefault(self.scheduler(trial.queue).batch_key(), []).append(trial)
        found: dict[str, JobStatus | QueueError] = {}
        for members in groups.values():
            sch = self.scheduler(members[0].queue)
            try:
                results = sch.poll_many([(t.handle or Handle(t.queue), t.log_offset) for t in members])
            except QueueError as exc:
                results = [exc] * len(members)
            found.update((t.id, r) for t, r in zip(members, results))
        return [found[t.id] for t in trials]

    def watch(self, trial: TrialState, status: JobStatus | QueueError) -> None:
        """Act on one poll's answer for ``trial``."""
        queue = self.state.queue(trial.queue)
        sch = self.scheduler(queue.name)
        if isinstance(status, QueueError):
            self.queues.contact_failed(queue, status)
            return
        self.queues.contact_ok(queue)
        requeue = self.outcomes.note_requeue(trial, status) if trial.state == "running" else None
        if requeue is not None:
            self.outcomes.preempted(trial, requeue)  # it ran, and is back in the queue (or already ran again)
            if status.state != "queued":
                return  # its next run's log: the next poll reads it from the start
        if status.state == "queued":  # waiting for the batch system: no progress, no stall
            trial.move("waiting")
            trial.reason = status.reason
            self.stalls.restart(trial.id)
            return
        if trial.state == "queued":
            trial.move("started")
            trial.reason, trial.started_unix = "", time.time()
        self.progress(trial, status)
        halted = self.ctx.halving.verdict(trial, status)  # a stop at a rung, decided now or before
        if halted is not None:
            self.save()  # the decision first: after a restart it is stopped again, never retried
            try:
                sch.stop(trial.handle or Handle(trial.queue))
                sch.fetch(trial.handle or Handle(trial.queue))  # remote slots: its logs home for the report
            except QueueError as exc:
                self.queues.contact_failed(queue, exc)
                return
            self.outcomes.attempt_over(trial, "stopped_early", None, halted)
        elif status.done:
            self.ended(trial, status, sch)
        elif status.state == "absent":
            self.outcomes.attempt_over(trial, "failed", None, "its folder or pid file disappeared")
        elif self.stalls.quiet_for(trial.id) > self.state.stall_timeout:
            try:
                sch.stop(trial.handle or Handle(trial.queue))
            except QueueError as exc:
                self.queues.contact_failed(queue, exc)
                return
            self.outcomes.attempt_over(trial, "stalled", None,
                                       f"no growth of logs.json.txt or stdout.log for {self.state.stall_timeout:g}s")

    def progress(self, trial: TrialState, status: JobStatus) -> None:
        """The epochs and scores of the complete new log lines; the growth of its files."""
        text = status.new_log
        complete = text[: text.rfind("\n") + 1]
        for record in parse_log(complete.splitlines()).rows:
            trial.epoch += is_epoch_row(record)
            if isinstance(record.get("val_mse"), (int, float)):
                trial.val_mse = float(record["val_mse"])
            score = row_score(record)
            score = first_number(record, (PROGRAM_SCORE,)) if score is None else score  # a program's metric
            if score is not None:
                trial.last_score = score
                if trial.best_score is None or score > trial.best_score:
                    trial.best_score, trial.best_success = score, row_success(record)
        trial.log_offset += len(complete.encode())
        if trial.started_unix:
            trial.elapsed_s = round(time.time() - trial.started_unix, 1)
        self.stalls.saw(trial.id, status.log_size, status.out_size)

    def ended(self, trial: TrialState, status: JobStatus, sch: Scheduler) -> None:
        """The job ended: fetch its files, then read its end from its exit code and summary."""
        try:
            sch.fetch(trial.handle or Handle(trial.queue))
        except QueueError as exc:
            self.queues.contact_failed(self.state.queue(trial.queue), exc)
            return
        drill.point("ended-fetched")
        run_dir = self.sdir.trial_dir(trial.id)
        summary = read_summary(run_dir)
        verdict = summary.status if summary else None
        over = self.outcomes.attempt_over
        if status.resume:
            over(trial, "timeout", status.exit_code, f"{status.reason}; a retry resumes it from its latest checkpoint")
            return
        if status.exit_code == EXIT_DISK_FULL:
            self.disk_full(trial, f"{_tail(run_dir / STDOUT, 1) or 'no space left on device'} ({run_dir})")
            return
        if status.exit_code == EXIT_NO_CUDA:
            self.no_cuda(trial, _tail(run_dir / STDOUT, 1).removeprefix("imf: error: ") or "no CUDA device")
            return
        if status.exit_code == EXIT_GPU_OOM:
            self.out_of_memory(trial, (summary.reason if summary else "") or _tail(run_dir / STDOUT, 1)
                               .removeprefix("imf: error: ") or "out of GPU memory")
            return
        if verdict in GOOD_ENDS and status.exit_code == OUTCOME_EXIT[verdict]:
            trial.epoch = summary.epochs_done or trial.epoch
            if summary.best_score is not None:
                trial.best_score = summary.best_score
                self.ctx.metric_of[trial.id] = summary_terms(summary.extra.get("metric"))
                trial.best_success = summary.best_success_rate
            over(trial, verdict, status.exit_code, "")
            return
        if status.exit_code == 0:
            reason = f"exited 0 but summary.json says status {verdict!r}" if verdict else \
                "exited 0 without a summary.json"
        elif status.exit_code is None and sch.resumes_lost_jobs:  # its host restarted, or it was killed
            why = status.reason or "its job vanished without an exit code"
            over(trial, "lost", None, f"{why} in {run_dir}; a retry resumes it from its latest checkpoint")
            return
        elif status.exit_code is None:
            reason = status.reason or "the job vanished without an exit code"
        else:
            reason = f"exit code {status.exit_code}" + (f" ({status.reason})" if status.reason else "")
        tail = _tail(run_dir / STDOUT)
        over(trial, "failed", status.exit_code,
             f"{reason} in {run_dir}" + (f"; stdout.log ends: {tail}" if tail else ""))

    def disk_full(self, trial: TrialState, reason: str) -> None:
        """The trial's disk is full: its queue is blocked (the next trial would fill it too), the
        trial waits for a live queue with its retries untouched; ``--resume`` unblocks."""
        trial.note_attempt("disk full", reason, EXIT_DISK_FULL)
        trial.move("requeued")
        trial.exit_code, trial.reason, trial.handle = EXIT_DISK_FULL, reason, None
        self.stalls.forget(trial.id)
        self.queues.queue_down(self.state.queue(trial.queue), f"disk full: {reason}", state="blocked")

    def no_cuda(self, trial: TrialState, reason: str) -> None:
        """The trial found no CUDA device on its GPU slot (a batch system's node, or a host the
        probe misjudged): the slot is down, the trial waits for a live queue, retries untouched."""
        trial.note_attempt("no CUDA", reason, EXIT_NO_CUDA)
        trial.move("requeued")
        trial.exit_code, trial.reason, trial.handle = EXIT_NO_CUDA, reason, None
        self.stalls.forget(trial.id)
        self.queues.queue_down(self.state.queue(trial.queue), f"its trial found no CUDA device: {reason}")

    def out_of_memory(self, trial: TrialState, reason: str) -> None:
        """Out of GPU memory: retried once on a live GPU queue with more free memory (probed
        again now), else failed with the reason, which says what to run instead."""
        here = self.state.queue(trial.queue)
        trial.note_attempt("out of memory", reason, EXIT_GPU_OOM)
        trial.exit_code, trial.reason = EXIT_GPU_OOM, reason
        self.stalls.forget(trial.id)
        first = sum(h["outcome"] == "out of memory" for h in trial.history) == 1
        bigger = self.queues.more_gpu_memory(here) if first else None
        if bigger is None:
            trial.move("ended", "failed")
            trial.finished = now_iso()
            self.log(f"out of memory {trial.id} after {trial.attempts} attempt(s): {reason}")
            self.save()  # the end before the records (see Outcomes.attempt_over)
            self.outcomes.record(trial)
        else:
            trial.move("retry")
            orders = [t.order for t in self.state.trials if t.queue == bigger.name]
            trial.queue, trial.order = bigger.name, min(orders, default=0) - 1
            self.log(f"out of memory {trial.id} on {here.name}: {reason}; retry on {bigger.name} "
                     f"({free_mib(bigger) / 1024:.1f} GiB free, {here.name} has {free_mib(here) / 1024:.1f} GiB)")
        self.save()


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace")[-4000:]
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())
