"""The sweep engine's run loop: take the controller's lock, check the queues, recover what a
stopped controller left, then step (poll, watch, start on free slots) until every trial ended,
and end the sweep (record, report, notify).

Every change of state is written to sweep.json before it matters (a trial is marked
``starting`` before its process starts), so a controller killed at any moment can be resumed
without running a trial twice. Ctrl-C (or SIGTERM) stops launching and leaves the running
trials running; ``--resume`` re-attaches to them by pid and start time.

``Engine`` composes the engine's parts, each with one job, over one shared ``SweepContext``
(context.py): ``Outcomes`` (outcomes.py: an attempt's end, retry, record, preemption, orphan),
``QueueHealth`` (queue_health.py: checks, GPU probes, a queue going down), ``Starter``
(starter.py: the job, the start, a start in doubt), ``Watcher`` (watcher.py: polls, progress,
what an end means) and ``Recovery`` (recovery.py: orphans, re-attaching on resume).
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

from imf.atomic import clean_stale_temps
from imf.clock import now_iso
from imf.errors import ImfError, SweepError
from imf.scheduler import JobRequest, Scheduler
from imf.store import SWEEP_STATE
from imf.sweep.context import Part, SweepContext
from imf.sweep.finish import notify, write_report
from imf.sweep.folder import SweepDir
from imf.sweep.outcomes import Outcomes
from imf.sweep.queue_health import QueueHealth
from imf.sweep.recovery import Recovery
from imf.sweep.starter import Starter
from imf.sweep.state import ACTIVE, FINAL, SweepState, TrialState
from imf.sweep.watcher import Watcher

__all__ = ["Engine"]


class Engine(Part):
    """One sweep's controller: the run loop over the engine's parts. As a ``Part`` it shows the
    shared context's state, sdir, log, save and scheduler to the code that drives a sweep."""

    def __init__(self, sdir: SweepDir, state: SweepState, echo: Callable[[str], None] = print,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(SweepContext(sdir, state, echo, sleep))
        ctx = self.ctx
        self.outcomes = Outcomes(ctx)
        self.queue_health = QueueHealth(ctx, self.outcomes)
        self.starter = Starter(ctx, self.outcomes, self.queue_health)
        self.watcher = Watcher(ctx, self.outcomes, self.queue_health)
        self.recovery = Recovery(ctx, self.outcomes, self.queue_health, self.starter)
        self.report_path: Path | None = None
        self.report_text: str | None = None

    # ------------------------------------------------------------------ the face others use
    @property
    def schedulers(self) -> dict[str, Scheduler]:
        return self.ctx.schedulers

    def job_request(self, trial: TrialState) -> JobRequest:
        return self.starter.job_request(trial)

    def queues_down(self, only_plugins: bool = False) -> dict[str, str]:
        return self.queue_health.queues_down(only_plugins)

    def require_queues(self, down: dict[str, str]) -> None:
        self.queue_health.require_queues(down)

    # ------------------------------------------------------------------ the loop
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
                self._begin()
                while not self._step():
                    self.ctx.sleep(self.state.poll)
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

    def _begin(self) -> None:
        """Check the queues (a fresh sweep: their plugins too, and enough of them), then settle
        what a stopped controller left: orphans, and the trials it was running."""
        health = self.queue_health
        fresh = all(t.state == "pending" and not t.history for t in self.state.trials)
        health.check_queues()
        if fresh:  # a resume goes on with what is live (its orphans wait for their hosts)
            down = {q.name: q.reason for q in self.state.queues if q.state != "live"}
            plugins = {k: v for k, v in health.queues_down(only_plugins=True).items() if k not in down}
            for name, why in plugins.items():
                health.queue_down(self.state.queue(name), why)
            health.require_queues({**down, **plugins})
        self.recovery.resolve_orphans()
        self.recovery.complete_old_handles()
        self.recovery.reattach_all()

    def _step(self) -> bool:
        """One poll of every running trial and one launch per free slot; True when all ended."""
        self.recovery.resolve_orphans()
        if any(t.state == "starting" for t in self.state.trials):  # their slot did not answer yet
            self.recovery.reattach_all(("starting",))
        watched = [t for t in self.state.trials if t.state in ("queued", "running")]
        for trial, status in zip(watched, self.watcher.poll(watched)):
            self.watcher.watch(trial, status)
        for queue in self.state.live_queues():
            if any(t.queue == queue.name and t.state in ACTIVE for t in self.state.trials):
                continue
            pending = self.state.pending_on(queue.name)
            trial = pending[0] if pending else self.starter.steal_for(queue)
            if trial is not None:
                self.starter.launch(trial, queue)
        self.save()
        if all(t.state in FINAL for t in self.state.trials):
            return True
        if not self.state.live_queues():
            why = "; ".join(f"{q.name} {q.state}: {q.reason}" for q in self.state.queues)
            raise SweepError(f"every queue is down or blocked ({why}); fix them and continue with "
                             f"imf sweep --resume {self.sdir.path}")
        return False

    # ------------------------------------------------------------------ the end
    def _complete(self) -> None:
        for trial in self.state.trials:
            if not trial.recorded:
                self.outcomes.record(trial)
        self.recovery.unresolved_orphans()
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
        self.ctx.echo(self.report_text)
        self.log(f"report written: {self.report_path}")
        if self.state.notify:
            self.log(notify(self.state.notify, self.report_path))
        unrecorded = [t.id for t in self.state.trials if not t.recorded]
        if unrecorded:
            raise SweepError(f"sweep {self.state.name} finished, but {len(unrecorded)} trial(s) could "
                             f"not be recorded ({', '.join(unrecorded[:3])}); see {self.sdir.path / 'sweep.log'}")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
