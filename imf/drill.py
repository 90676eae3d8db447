"""Kill points for the exactly-once drill (benchmarks/drills/drills_once.py): a controller or job
wrapper that reaches a named step of a trial's start or end while ``IMF_DRILL_KILL=POINT:N`` is
set SIGKILLs itself the N-th time it gets there, so the drill can open every window between two
writes on purpose. Unset (always, outside the drill), a point costs one dictionary look-up.
"""
from __future__ import annotations

import os
import signal
from collections import Counter

DRILL_ENV = "IMF_DRILL_KILL"
# A trial's start, in order: sweep.json says "starting" with the attempt's token; the wrapper has
# claimed the folder; spawned the job; written its pid file; the engine has the handle; sweep.json
# says "running". (A wrapper point kills the controller on a local slot, the remote wrapper on ssh.)
START = ("launch-saved", "wrapper-claimed", "wrapper-spawned", "wrapper-pid-written", "job-started",
         "start-saved")
# Its end: the results fetched; sweep.json says it ended; the stores hold it; sweep.json says so.
END = ("ended-fetched", "ended-saved", "recorded", "attempt-noted")
RESUME = ("start-settled",)  # a resumed controller asked the slot about a start in doubt
POINTS = (*START, *END, *RESUME)
# imf loop's own writes: loop.json; a round's hypothesis block; its conclusion.
LOOP = ("loop-saved", "hypothesis-logged", "round-concluded")
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
