"""What every part of the sweep engine shares: one sweep's folder and state, its schedulers, the
controller's bookkeeping, and the log and save that every change goes through.

``SweepContext`` is built once per controller (by ``Engine``) and handed to each of the engine's
parts (outcomes.py, queue_health.py, starter.py, watcher.py, recovery.py); ``Part`` is their
common front on it, so a part reads ``self.state`` and calls ``self.log`` like the engine does.
A trial's state changes only through ``TrialState.move`` (the transitions of state.py).
"""
from __future__ import annotations

import json
import time
from collections import Counter
from typing import Callable

from imf.report import Terms
from imf.scheduler import Scheduler, new_token, scheduler_for
from imf.sweep.folder import SweepDir
from imf.sweep.halving import Halving
from imf.sweep.stall import StallWatch
from imf.sweep.state import SweepState


class SweepContext:
    """One controller's view of its sweep: the files, the state, and who says what."""

    def __init__(self, sdir: SweepDir, state: SweepState, echo: Callable[[str], None] = print,
                 sleep: Callable[[float], None] = time.sleep):
        self.sdir, self.state, self.echo, self.sleep = sdir, state, echo, sleep
        self.schedulers: dict[str, Scheduler] = {}
        self.failures: Counter[str] = Counter()  # queue -> failed contacts in a row
        self.stalls = StallWatch()  # when each running trial's files last grew
        self.orphan_tried: dict[str, float] = {}  # down queue -> when its orphans were last asked
        self.halving = Halving(state)  # successive halving's scores and decisions (or none)
        self.metric_of: dict[str, Terms] = {}  # trial id -> a program's metric, for its end's line
        self._written = ""
        # every token sweep.json holds, read before recovery drops any: a new one is later
        handles = [h for t in state.trials for h in [t.handle, *(o.handle for o in t.orphans)] if h]
        self.newest_token = new_token([h.token for h in handles if h.token])

    def log(self, message: str) -> None:
        """One line in sweep.log, echoed."""
        self.echo(self.sdir.log(message))

    def save(self) -> None:
        """Write sweep.json when the state changed since the last write."""
        text = json.dumps(self.state.to_dict(), sort_keys=True)
        if text != self._written:
            self.sdir.save(self.state)
            self._written = text

    def scheduler(self, queue: str) -> Scheduler:
        """The scheduler of ``queue`` (one per queue, opened on first use)."""
        if queue not in self.schedulers:
            q = self.state.queue(queue)
            self.schedulers[queue] = scheduler_for(q.spec, q.options)
        return self.schedulers[queue]


class Part:
    """A part of the engine: it works on the shared context (``self.ctx``) and reads it as its own."""

    def __init__(self, ctx: SweepContext):
        self.ctx = ctx

    @property
    def state(self) -> SweepState:
        return self.ctx.state

    @property
    def sdir(self) -> SweepDir:
        return self.ctx.sdir

    @property
    def stalls(self) -> StallWatch:
        return self.ctx.stalls

    def log(self, message: str) -> None:
        self.ctx.log(message)

    def save(self) -> None:
        self.ctx.save()

    def scheduler(self, queue: str) -> Scheduler:
        return self.ctx.scheduler(queue)
