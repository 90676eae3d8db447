"""The queue loop: start the next trial when a slot frees, watch, recover, finish.

Every change of state is written to sweep.json before it matters (a trial is marked
``starting`` before its process starts), so a controller killed at any moment can be resumed
without running a trial twice. Ctrl-C (or SIGTERM) stops launching and leaves the running
trials running; ``--resume`` re-attaches to them by pid and start time.
"""
from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from filelock import FileLock, Timeout

from imf import drill
from imf.atomic import clean_stale_temps
from imf.clock import now_iso
from imf.errors import (EXIT_DISK_FULL, EXIT_GPU_OOM, EXIT_NO_CUDA, OUTCOME_EXIT, FolderInUseError,
                        ImfError, QueueError, SweepError)
from imf.scheduler import Handle, JobStatus, Scheduler
from imf.sweep.finish import notify, write_report
from imf.sweep.gpus import free_mib
from imf.sweep.recovery import Recovery
from imf.sweep.state import ACTIVE, FINAL, QueueState, SweepState, TrialState
from imf.store import (PROGRAM_SCORE, STDOUT, SWEEP_STATE, first_number, is_epoch_row, parse_log, read_summary,
                       row_score, row_success)
from imf.report import summary_terms

__all__ = ["Engine"]
GOOD_ENDS = ("completed", "stopped_early", "diverged")


class Engine(Recovery):
    """The queue loop of one sweep (recovery and the shared outcomes are its bases)."""

    @contextmanager
    def _controller(self) -> Iterator[None]:
        lock = FileLock(str(self.sdir.path / "sweep.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise SweepError(f"{self.sdir.path}: another controller is running this sweep "
                             f"(pid {self.state.controller.get('pid')})") from None
        clean_stale_temps(self.sdir.path, (SWEEP_STATE,))  # only a controller writes sweep.json
        old = None
        if threading.current_thread() is threading.main_thread():
            old = signal.signal(signal.SIGTERM, _interrupt)
        try:
            yield
        finally:
            if old is not None:
                signal.signal(signal.SIGTERM, old)
            for sch in self.schedulers.values():
                sch.close()
            lock.release()

    # ------------------------------------------------------------------ the loop
    def run(self, prepare: Callable[[], None] | None = None) -> SweepState:
        """Run the sweep to its end (or to Ctrl-C), then record, report and notify; ``prepare``
        first changes the state under the controller's lock (its error leaves the files as they were)."""
        self.sdir.path.mkdir(parents=True, exist_ok=True)
        with self._controller():
            if prepare is not None:
                prepare()
            self.state.status = "running"
            self.state.controller = {"pid": os.getpid(), "host": socket.gethostname(),
                                     "started": now_iso()}
            self.save()
            try:
                fresh = all(t.state == "pending" and not t.history for t in self.state.trials)
                self._check_queues()
                if fresh:  # a resume goes on with what is live (its orphans wait for their hosts)
                    down = {q.name: q.reason for q in self.state.queues if q.state != "live"}
                    plugins = {k: v for k, v in self.queues_down(only_plugins=True).items() if k not in down}
                    for name, why in plugins.items():
                        self._queue_down(self.state.queue(name), why)
                    self.require_queues({**down, **plugins})
                self._resolve_orphans()
                self._reattach_all()
                while not self._step():
                    self.sleep(self.state.poll)
            except KeyboardInterrupt:
                self.state.status = "interrupted"
                self.save()
                self.log(f"interrupted: no new trial starts, running ones go on; continue with "
                         f"imf sweep --resume {self.sdir.path}")
                raise
            except Exception as exc:  # a sweep error, or any other: never left "running"
                self.state.status = "stopped"
                self.save()
                self.log(f"stopped: {exc}" if isinstance(exc, ImfError) else
                         f"stopped: {type(exc).__name__}: {exc}")
                raise
            self._complete()
        return self.state

    def _step(self) -> bool:
        """One poll of every running trial and one launch per free slot; True when all ended."""
        self._resolve_orphans()
        if any(t.state == "starting" for t in self.state.trials):  # their slot did not answer yet
            self._reattach_all(("starting",))
        watched = [t for t in self.state.trials if t.state in ("queued", "running")]
        for trial, status in zip(watched, self._poll(watched)):
            self._watch(trial, status)
        for queue in self.state.live_queues():
            if any(t.queue == queue.name and t.state in ACTIVE for t in self.state.trials):
                continue
            pending = self.state.pending_on(queue.name)
            trial = pending[0] if pending else self._steal_for(queue)
            if trial is not None:
                self._launch(trial, queue)
        self.save()
        if all(t.state in FINAL for t in self.state.trials):
            return True
        if not self.state.live_queues():
            why = "; ".join(f"{q.name} {q.state}: {q.reason}" for q in self.state.queues)
            raise SweepError(f"every queue is down or blocked ({why}); fix them and continue with "
                             f"imf sweep --resume {self.sdir.path}")
        return False

    def _steal_for(self, idle: QueueState) -> TrialState | None:
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

    def _launch(self, trial: TrialState, queue: QueueState) -> None:
        job, sch = self.job_request(trial), self.scheduler(queue.name)
        job.token = self._next_token()  # names this attempt in its claim, pid and exit files
        trial.move("launch")
        trial.reason = ""
        trial.handle = Handle(queue.spec, sch.job_dir(job), str(job.run_dir), job.token)
        self.save()  # before the process exists: a resume then looks before starting again
        drill.point("launch-saved")
        try:
            handle = sch.start(job)
        except FolderInUseError as exc:  # someone else's trial: never stopped, this attempt fails
            self._attempt_over(trial, "failed", None, str(exc))
            return
        except QueueError as exc:
            status = self._start_failed(trial, queue, exc)
            if status is None:
                return
            handle = trial.handle or Handle(queue.spec)  # it started after all
            handle.pid, handle.start_time = status.pid, status.start_time
        drill.point("job-started")
        self.failures[queue.name] = 0
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

    def _poll(self, trials: list[TrialState]) -> list[JobStatus | QueueError]:
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

    def _watch(self, trial: TrialState, status: JobStatus | QueueError) -> None:
        queue = self.state.queue(trial.queue)
        sch = self.scheduler(queue.name)
        if isinstance(status, QueueError):
            self._contact_failed(queue, status)
            return
        self.failures[queue.name] = 0
        requeue = self._note_requeue(trial, status) if trial.state == "running" else None
        if requeue is not None:
            self._preempted(trial, requeue)  # it ran, and is back in the queue (or already ran again)
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
        self._progress(trial, status)
        halted = self.halving.verdict(trial, status)  # a stop at a rung, decided now or before
        if halted is not None:
            self.save()  # the decision first: after a restart it is stopped again, never retried
            try:
                sch.stop(trial.handle or Handle(trial.queue))
                sch.fetch(trial.handle or Handle(trial.queue))  # remote slots: its logs home for the report
            except QueueError as exc:
                self._contact_failed(queue, exc)
                return
            self._attempt_over(trial, "stopped_early", None, halted)
        elif status.done:
            self._ended(trial, status, sch)
        elif status.state == "absent":
            self._attempt_over(trial, "failed", None, "its folder or pid file disappeared")
        elif self.stalls.quiet_for(trial.id) > self.state.stall_timeout:
            try:
                sch.stop(trial.handle or Handle(trial.queue))
            except QueueError as exc:
                self._contact_failed(queue, exc)
                return
            self._attempt_over(trial, "stalled", None,
                               f"no growth of logs.json.txt or stdout.log for {self.state.stall_timeout:g}s")

    def _progress(self, trial: TrialState, status: JobStatus) -> None:
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

    def _ended(self, trial: TrialState, status: JobStatus, sch: Scheduler) -> None:
        try:
            sch.fetch(trial.handle or Handle(trial.queue))
        except QueueError as exc:
            self._contact_failed(self.state.queue(trial.queue), exc)
            return
        drill.point("ended-fetched")
        run_dir = self.sdir.trial_dir(trial.id)
        summary = read_summary(run_dir)
        verdict = summary.status if summary else None
        if status.resume:
            self._attempt_over(trial, "timeout", status.exit_code,
                               f"{status.reason}; a retry resumes it from its latest checkpoint")
            return
        if status.exit_code == EXIT_DISK_FULL:
            self._disk_full(trial, f"{_tail(run_dir / STDOUT, 1) or 'no space left on device'} ({run_dir})")
            return
        if status.exit_code == EXIT_NO_CUDA:
            self._no_cuda(trial, _tail(run_dir / STDOUT, 1).removeprefix("imf: error: ") or "no CUDA device")
            return
        if status.exit_code == EXIT_GPU_OOM:
            self._out_of_memory(trial, (summary.reason if summary else "") or _tail(run_dir / STDOUT, 1)
                                .removeprefix("imf: error: ") or "out of GPU memory")
            return
        if verdict in GOOD_ENDS and status.exit_code == OUTCOME_EXIT[verdict]:
            trial.epoch = summary.epochs_done or trial.epoch
            if summary.best_score is not None:
                trial.best_score = summary.best_score
                self.metric_of[trial.id] = summary_terms(summary.extra.get("metric"))
                trial.best_success = summary.best_success_rate
            self._attempt_over(trial, verdict, status.exit_code, "")
            return
        if status.exit_code == 0:
            reason = f"exited 0 but summary.json says status {verdict!r}" if verdict else \
                "exited 0 without a summary.json"
        elif status.exit_code is None and sch.resumes_lost_jobs:  # its host restarted, or it was killed
            why = status.reason or "its job vanished without an exit code"
            self._attempt_over(trial, "lost", None, f"{why} in {run_dir}; a retry resumes it from its latest checkpoint")
            return
        elif status.exit_code is None:
            reason = status.reason or "the job vanished without an exit code"
        else:
            reason = f"exit code {status.exit_code}" + (f" ({status.reason})" if status.reason else "")
        tail = _tail(run_dir / STDOUT)
        self._attempt_over(trial, "failed", status.exit_code,
                           f"{reason} in {run_dir}" + (f"; stdout.log ends: {tail}" if tail else ""))

    def _disk_full(self, trial: TrialState, reason: str) -> None:
        """The trial's disk is full: its queue is blocked (the next trial would fill it too), the
        trial waits for a live queue with its retries untouched; ``--resume`` unblocks."""
        trial.note_attempt("disk full", reason, EXIT_DISK_FULL)
        trial.move("requeued")
        trial.exit_code, trial.reason, trial.handle = EXIT_DISK_FULL, reason, None
        self.stalls.forget(trial.id)
        self._queue_down(self.state.queue(trial.queue), f"disk full: {reason}", state="blocked")

    def _no_cuda(self, trial: TrialState, reason: str) -> None:
        """The trial found no CUDA device on its GPU slot (a batch system's node, or a host the
        probe misjudged): the slot is down, the trial waits for a live queue, retries untouched."""
        trial.note_attempt("no CUDA", reason, EXIT_NO_CUDA)
        trial.move("requeued")
        trial.exit_code, trial.reason, trial.handle = EXIT_NO_CUDA, reason, None
        self.stalls.forget(trial.id)
        self._queue_down(self.state.queue(trial.queue), f"its trial found no CUDA device: {reason}")

    def _out_of_memory(self, trial: TrialState, reason: str) -> None:
        """Out of GPU memory: retried once on a live GPU queue with more free memory (probed
        again now), else failed with the reason, which says what to run instead."""
        here = self.state.queue(trial.queue)
        trial.note_attempt("out of memory", reason, EXIT_GPU_OOM)
        trial.exit_code, trial.reason = EXIT_GPU_OOM, reason
        self.stalls.forget(trial.id)
        first = sum(h["outcome"] == "out of memory" for h in trial.history) == 1
        bigger = self._more_gpu_memory(here) if first else None
        if bigger is None:
            trial.move("ended", "failed")
            trial.finished = now_iso()
            self.log(f"out of memory {trial.id} after {trial.attempts} attempt(s): {reason}")
            self.save()  # the end before the records (see EngineBase._attempt_over)
            self._record(trial)
        else:
            trial.move("retry")
            orders = [t.order for t in self.state.trials if t.queue == bigger.name]
            trial.queue, trial.order = bigger.name, min(orders, default=0) - 1
            self.log(f"out of memory {trial.id} on {here.name}: {reason}; retry on {bigger.name} "
                     f"({free_mib(bigger) / 1024:.1f} GiB free, {here.name} has {free_mib(here) / 1024:.1f} GiB)")
        self.save()

    def _more_gpu_memory(self, here: QueueState) -> QueueState | None:
        """The live GPU queue with the most free memory now, when it has more than ``here`` had
        at its last probe (before the trial filled it)."""
        self._probe_gpus([q for q in self.state.live_queues() if q.name != here.name])
        others = [q for q in self.state.live_queues() if q.name != here.name and q.gpu]
        best = max(others, key=free_mib, default=None)
        return best if best is not None and free_mib(best) > free_mib(here) else None

    # ------------------------------------------------------------------ the end
    def _complete(self) -> None:
        for trial in self.state.trials:
            if not trial.recorded:
                self._record(trial)
        self._unresolved_orphans()
        self.state.status = "finished"
        self.save()
        counts = Counter(t.state for t in self.state.trials)
        self.log(f"sweep {self.state.name} finished: "
                 + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        try:
            self.report_path, self.report_text = write_report(self.sdir.path)
        except (ImfError, ImportError, OSError, ValueError, KeyError) as exc:
            self.log(f"report failed: {type(exc).__name__}: {exc}")
            raise SweepError(f"sweep {self.state.name} finished, but its report failed: {exc}") from None
        self.echo(self.report_text)
        self.log(f"report written: {self.report_path}")
        if self.state.notify:
            self.log(notify(self.state.notify, self.report_path))
        unrecorded = [t.id for t in self.state.trials if not t.recorded]
        if unrecorded:
            raise SweepError(f"sweep {self.state.name} finished, but {len(unrecorded)} trial(s) could "
                             f"not be recorded ({', '.join(unrecorded[:3])}); see {self.sdir.path / 'sweep.log'}")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace")[-4000:]
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())


def _waits_for_memory(trial: TrialState) -> bool:
    """Its last attempt ran out of GPU memory: it was sent to a queue with more free memory."""
    return bool(trial.history) and trial.history[-1].get("outcome") == "out of memory"
