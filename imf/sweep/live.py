"""The sweep's status table kept live on a terminal (rich Live), under the sweep's log lines.

``imf sweep`` on a terminal and ``imf status --watch`` both show it; the table is read from
sweep.json (written atomically) at every refresh, so it shows what ``imf status`` would.
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from rich.console import Console, RenderableType
from rich.live import Live
from rich.text import Text

from imf.errors import ImfError, SweepError
from imf.sweep.folder import SweepDir
from imf.sweep.status import find_sweep, render_status, status_view, sweep_over


class LiveView:
    """A context manager: ``echo`` prints a log line above the table; ``follow`` names the sweep."""

    def __init__(self, console: Console, refresh_s: float = 1.0) -> None:
        self.console = console
        self.sdir: SweepDir | None = None
        self.last: RenderableType = Text("")
        self.live = Live(get_renderable=self.render, console=console, transient=False,
                         refresh_per_second=1 / max(0.1, min(refresh_s, 5.0)))

    def follow(self, sdir: SweepDir) -> None:
        self.sdir = sdir
        self.live.refresh()

    def echo(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def render(self) -> RenderableType:
        if self.sdir is not None:
            try:
                self.last = status_view(self.sdir, bars=True)
            except (ImfError, OSError, ValueError):
                pass  # keep the last table while sweep.json cannot be read
        return self.last

    def __enter__(self) -> "LiveView":
        self.live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.live.refresh()
        self.live.stop()


def _print_line(line: str) -> None:
    print(line, flush=True)


@contextmanager
def sweep_view(on_terminal: bool) -> Iterator[tuple[Callable[[str], None], Callable[[SweepDir], None] | None]]:
    """(echo, on_start) for ``start_sweep``/``resume_sweep``: on a terminal the log lines scroll
    above the live table; elsewhere (CI, nohup, pipes) plain log lines only."""
    if not on_terminal:
        yield _print_line, None
        return
    with LiveView(Console()) as view:
        yield view.echo, view.follow


def watch(path: str | Path, interval: float, echo: Callable[[str], None],
          sleep: Callable[[float], None] = time.sleep, console: Console | None = None) -> None:
    """The table every ``interval`` seconds until the sweep is no longer running: kept in place
    by rich Live on ``console`` (a terminal), else printed again each time through ``echo``."""
    if not 0 < interval < math.inf:
        raise SweepError(f"--interval: must be a finite number of seconds > 0, got {interval}")
    sdir = find_sweep(path)
    if console is not None:
        with LiveView(console, refresh_s=interval) as view:
            view.follow(sdir)
            while not sweep_over(sdir.load()):
                sleep(interval)
        return
    while True:
        state = sdir.load()
        echo(render_status(sdir, state))
        if sweep_over(state):
            return
        sleep(interval)
