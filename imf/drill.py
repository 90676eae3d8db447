"""Kill points for the exactly-once drill (benchmarks/drills_once.py): a controller or job
wrapper that reaches a named step of a trial's start or end while ``IMF_DRILL_KILL=POINT:N`` is
set SIGKILLs itself the N-th time it gets there, so the drill can open every window between two
writes on purpose. Unset (always, outside the drill), a point costs one dictionary look-up.
"""
from __future__ import annotations

import os
import signal
from collections import Counter

DRILL_ENV = "IMF_DRILL_KILL"
POINTS = ("launch-saved", "wrapper-spawned", "job-started", "start-saved", "ended-fetched",
          "attempt-noted")
_reached: Counter[str] = Counter()


def point(name: str) -> None:
    """SIGKILL this process here when the drill asks for it (``POINT:N``: the N-th time)."""
    spec = os.environ.get(DRILL_ENV)
    if not spec:
        return
    wanted, _, times = spec.partition(":")
    if wanted != name:
        return
    _reached[name] += 1
    if _reached[name] == int(times or 1):
        os.kill(os.getpid(), signal.SIGKILL)
