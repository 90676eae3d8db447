"""The health of the sweep's queues: checking them before and as the sweep runs, probing their
GPUs, counting failed contacts, and taking a queue down (or blocking it: its machine answers but
cannot take work) with its trials moved to the live queues.

A queue goes down after ``DOWN_AFTER`` failed contacts in a row, when its spec's ``check`` or
its GPU probe fails, or when a trial on it found no CUDA device or a full disk. Its waiting
trials move to the live queues (spread by the planner's ``assign``); a running one leaves its
job behind as an orphan (recovery.py) and starts again elsewhere.
"""
from __future__ import annotations

from imf.errors import QueueError, SweepError
from imf.sweep.context import Part, SweepContext
from imf.sweep.gpus import free_mib, probe_queues
from imf.sweep.outcomes import Outcomes
from imf.sweep.plan import assign
from imf.sweep.probe import queue_problems, refusal
from imf.sweep.state import ACTIVE, FINAL, QueueState, TrialState

DOWN_AFTER = 3  # consecutive failed contacts with a queue's machine before it is marked down


class QueueHealth(Part):
    """Checks and probes the queues; takes a failing one down and moves its trials."""

    def __init__(self, ctx: SweepContext, outcomes: Outcomes):
        super().__init__(ctx)
        self.outcomes = outcomes

    # ------------------------------------------------------------------ checks
    def check_queues(self) -> None:
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
                self.queue_down(queue, problems[queue.spec])
        self.probe_gpus()

    def queues_down(self, only_plugins: bool = False) -> dict[str, str]:
        """Every queue whose spec's check fails -> why: the host answers and imports imf, and
        then every plugin the trials load (imf/sweep/probe.py; nothing is changed)."""
        return queue_problems(self.state, self.scheduler, reach=not only_plugins)

    def require_queues(self, down: dict[str, str]) -> None:
        """SweepError unless --min-queues (default: every queue) passed their checks."""
        why = refusal(self.state, down)
        if why:
            raise SweepError(why)

    def probe_gpus(self, queues: list[QueueState] | None = None) -> None:
        """Probe the GPUs of the live GPU queues (one probe per host): a queue whose GPU is
        missing goes down, its trials to the live queues; the others learn their free memory."""
        for verdict in probe_queues(self.state.live_queues() if queues is None else queues, self.scheduler):
            queue = self.state.queue(verdict.queue)
            queue.gpu = verdict.device
            if verdict.found:
                self.log(f"queue {queue.name}: {verdict.text}")
            else:
                self.queue_down(queue, verdict.text)

    def more_gpu_memory(self, here: QueueState) -> QueueState | None:
        """The live GPU queue with the most free memory now, when it has more than ``here`` had
        at its last probe (before the trial filled it)."""
        self.probe_gpus([q for q in self.state.live_queues() if q.name != here.name])
        others = [q for q in self.state.live_queues() if q.name != here.name and q.gpu]
        best = max(others, key=free_mib, default=None)
        return best if best is not None and free_mib(best) > free_mib(here) else None

    # ------------------------------------------------------------------ contacts
    def contact_ok(self, queue: QueueState) -> None:
        """The queue's machine answered: its count of failed contacts starts again."""
        self.ctx.failures[queue.name] = 0

    def contact_failed(self, queue: QueueState, exc: Exception) -> None:
        failures = self.ctx.failures
        failures[queue.name] += 1
        self.log(f"queue {queue.name}: {exc} ({failures[queue.name]}/{DOWN_AFTER})")
        active = any(t.queue == queue.name and t.state in ACTIVE for t in self.state.trials)
        if queue.state == "live" and failures[queue.name] >= DOWN_AFTER or \
                queue.state == "down" and active:  # an orphan taken back, lost again
            self.queue_down(queue, str(exc))

    # ------------------------------------------------------------------ down
    def queue_down(self, queue: QueueState, reason: str, state: str = "down") -> None:
        """Mark ``queue`` down (or blocked: its machine answers, but cannot take work) and move
        its trials (waiting or lost with it) to live queues."""
        queue.state, queue.reason = state, reason
        self.log(f"queue {queue.name} is {state}: {reason}"
                 + ("; its trials wait for a live queue, their retries kept; free space and continue "
                    "with imf sweep --resume" if state == "blocked" else ""))
        moved = [t for t in self.state.trials if t.queue == queue.name and t.state not in FINAL]
        for trial in moved:
            halted = self.ctx.halving.stopped(trial) if trial.state in ACTIVE else None
            if halted:  # a stop decided at a rung: the job is an orphan, the trial never runs again
                self.outcomes.orphan(trial, queue.name, trial.handle, trial.attempts)
                self.outcomes.attempt_over(trial, "stopped_early", None, halted)
                continue
            if trial.state in ACTIVE:
                self.outcomes.orphan(trial, queue.name, trial.handle, trial.attempts)
                self.log(f"{trial.id} was running on {queue.name}; it starts again on a live queue")
                trial.note_attempt("queue down", reason, queue=queue.name)
                trial.handle = None
                self.stalls.forget(trial.id)
            trial.move("requeued")
        live = self.state.live_queues()
        moved = [t for t in moved if t.state == "pending"]
        if moved and live:
            self.reassign(moved, live)
        self.save()

    def reassign(self, moved: list[TrialState], live: list[QueueState]) -> None:
        """Spread ``moved`` over the ``live`` queues by cost, after what each already holds."""
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
