"""``imf status``: a table of a sweep's trials from its sweep.json (no controller needed)."""
from __future__ import annotations

import math
import os
import socket
import time
from pathlib import Path
from typing import Callable

from imf.errors import SweepError
from imf.scheduler.state import ACTIVE, FINAL, SweepDir, SweepState, TrialState

COLUMNS = ("queue", "trial", "state", "epoch", "val_mse", "last", "best", "elapsed", "eta")


def find_sweep(path: str | Path) -> SweepDir:
    """``path`` itself when it holds sweep.json, else its most recently updated sweep folder."""
    path = Path(path)
    if (path / "sweep.json").is_file():
        return SweepDir(path)
    found = sorted(path.glob("*/sweep.json"), key=lambda p: p.stat().st_mtime) if path.is_dir() else []
    if not found:
        raise SweepError(f"{path}: no sweep.json here or in its folders; give a sweep folder "
                         f"such as runs/<name>")
    return SweepDir(found[-1].parent)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _elapsed(trial: TrialState, now: float) -> float | None:
    if trial.state == "running" and trial.started_unix:
        return now - trial.started_unix
    return trial.elapsed_s


def trial_row(trial: TrialState, now: float) -> list[str]:
    elapsed = _elapsed(trial, now)
    eta = None
    if trial.state == "running" and elapsed and trial.epoch:
        eta = elapsed / trial.epoch * max(0, trial.epochs - trial.epoch)
    state = trial.state + (f" ({trial.attempts})" if trial.attempts > 1 else "")
    return [trial.queue, trial.id, state, f"{trial.epoch}/{trial.epochs}", _score(trial.val_mse),
            _score(trial.last_score), _score(trial.best_score), _duration(elapsed), _duration(eta)]


def controller_line(state: SweepState, sdir: SweepDir) -> str:
    info = state.controller or {}
    pid, host = info.get("pid"), info.get("host")
    alive = None
    if pid and host == socket.gethostname():
        try:
            os.kill(int(pid), 0)
            alive = True
        except (ProcessLookupError, PermissionError, ValueError):
            alive = False
    if state.status == "running" and alive is False:
        return f"controller pid {pid} is gone; continue with: imf sweep --resume {sdir.path}"
    if state.status == "running":
        return f"controller pid {pid} on {host}"
    if state.status == "interrupted":
        return f"interrupted; continue with: imf sweep --resume {sdir.path}"
    return state.status


def render_status(sdir: SweepDir, state: SweepState | None = None, now: float | None = None) -> str:
    state = state or sdir.load()
    now = time.time() if now is None else now
    done = sum(t.state in FINAL for t in state.trials)
    rows = [list(COLUMNS)]
    queue_pos = {q.name: i for i, q in enumerate(state.queues)}
    trials = sorted(state.trials, key=lambda t: (queue_pos.get(t.queue, 0), t.state not in ACTIVE,
                                                 t.state == "pending", t.order))
    rows += [trial_row(t, now) for t in trials]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = [f"sweep {state.name} ({sdir.path}): {done}/{len(state.trials)} ended; "
             f"{controller_line(state, sdir)}"]
    down = [q for q in state.queues if q.state == "down"]
    lines += [f"queue {q.name} is down: {q.reason}" for q in down]
    lines += [f"orphan of {t.id} on {o['handle'].get('host') or o['queue']} (pid "
              f"{o['handle'].get('pid')}): stopped when its host answers" for t in state.trials
              for o in t.orphans]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def watch(path: str | Path, interval: float, echo: Callable[[str], None],
          sleep: Callable[[float], None] = time.sleep, clear: bool = True) -> None:
    """Print the table every ``interval`` seconds until the sweep is no longer running."""
    if not 0 < interval < math.inf:
        raise SweepError(f"--interval: must be a finite number of seconds > 0, got {interval}")
    sdir = find_sweep(path)
    while True:
        state = sdir.load()
        echo(("\033[2J\033[H" if clear else "") + render_status(sdir, state))
        if state.status != "running" or all(t.state in FINAL for t in state.trials):
            return
        sleep(interval)
