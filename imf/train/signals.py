"""SIGTERM and SIGINT end a trial at its next safe point instead of mid-write.

``kill``, Slurm (time limit, preemption, scancel) and systemd send SIGTERM; a terminal sends
SIGINT. The first one sets a flag that the training loop reads between steps and epochs; the
run then ends as "interrupted" with its last complete checkpoint, and ``imf trial --resume``
continues it. A second SIGINT stops at once (KeyboardInterrupt). The handlers are installed
whatever the inherited disposition (a shell that starts a job in the background ignores
SIGINT for it), and only in the main thread, where Python allows it.
"""
from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """Context manager: ``received`` is the first stop signal's name ("SIGTERM"), or None."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def __call__(self) -> bool:
        return self.received is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # asked twice: stop now
        if self.received is None:  # the loop says so when it stops (no printing in a handler)
            self.received, self.signum = signal.Signals(signum).name, signum
