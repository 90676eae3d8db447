"""When each running trial last showed progress: a stall is no growth of its files for a while."""
from __future__ import annotations

import time
from typing import Callable


class StallWatch:
    """The sizes of each trial's logs.json.txt and stdout.log at its last growth, and when."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: dict[str, tuple[tuple[int, int] | None, float]] = {}

    def restart(self, trial_id: str) -> None:
        """The trial (re)started or waits in a batch queue: its quiet time counts from now."""
        self._last[trial_id] = (None, self.clock())

    def saw(self, trial_id: str, log_size: int, out_size: int) -> None:
        """A poll saw these sizes: a change (or the first sizes seen) is progress."""
        sizes = (log_size, out_size)
        if trial_id not in self._last or self._last[trial_id][0] != sizes:
            self._last[trial_id] = (sizes, self.clock())

    def quiet_for(self, trial_id: str) -> float:
        """Seconds since the trial's files last grew (0 for a trial not watched)."""
        last = self._last.get(trial_id)
        return 0.0 if last is None else self.clock() - last[1]

    def forget(self, trial_id: str) -> None:
        self._last.pop(trial_id, None)
