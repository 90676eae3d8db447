"""``imf status``: a table of a sweep's trials from its sweep.json (no controller needed)."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from rich.console import Group
from rich.progress_bar import ProgressBar
from rich.text import Text

from imf.errors import SweepError
from imf.store import PROGRESS, SWEEP_LOG, SWEEP_STATE, read_summary
from imf.sweep.folder import SweepDir
from imf.sweep.halving import status_lines
from imf.sweep.state import ACTIVE, FINAL, SweepState, TrialState
from imf.tables import table, to_text

STALE_PROGRESS_S = 120.0  # an older progress.json is a trial between epochs, or gone
COLUMNS = ("queue", "trial", "state", "epoch", "val_mse", "last", "best", "success", "elapsed", "eta")


def find_sweep(path: str | Path) -> SweepDir:
    """``path`` itself when it holds sweep.json, else its most recently updated sweep folder."""
    path = Path(path)
    if (path / SWEEP_STATE).is_file():
        return SweepDir(path)
    found = sorted(path.glob(f"*/{SWEEP_STATE}"), key=lambda p: p.stat().st_mtime) if path.is_dir() else []
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


def trial_row(trial: TrialState, now: float, run_dir: Path | None = None, controller_gone: bool = False) -> list[str]:
    """One table row; with ``run_dir``, a running trial's progress inside its epoch (progress.json)
    and, when the controller is gone, the trial's state as its own files tell it."""
    if controller_gone and run_dir is not None and trial.state in ACTIVE:
        return _row_from_files(trial, run_dir)
    elapsed = _elapsed(trial, now)
    eta = None
    if trial.state == "running" and elapsed and trial.epoch and trial.epochs:
        eta = elapsed / trial.epoch * max(0, trial.epochs - trial.epoch)
    inside = _inside_epoch(run_dir, now) if run_dir is not None and trial.state == "running" else None
    if inside is not None and not trial.epoch and trial.epochs:  # the first epoch: its own rate is all there is
        eta = inside[1] + inside[2] * max(0, trial.epochs - 1)
    state = trial.state + (f" ({trial.attempts})" if trial.attempts > 1 else "")
    if inside is not None:
        state += f" {inside[0]}"
    if trial.state == "queued" and trial.reason:
        state += f": {trial.reason}"  # Slurm's reason: Resources, Priority, ...
    if trial.state in FINAL and trial.exit_code:  # the table of imf/errors.py: 3 diverged, 1 failed...
        state += f" (exit {trial.exit_code})"
    return [trial.queue, trial.id, state, _epochs(trial.epoch, trial.epochs), _score(trial.val_mse),
            _score(trial.last_score), _score(trial.best_score),
            "-" if trial.best_success is None else f"{trial.best_success:.2f}", _duration(elapsed), _duration(eta)]


def _epochs(done: int, planned: int) -> str:
    """"3/10"; "3" for a trial that plans no epochs (a command trainer's program)."""
    return f"{done}/{planned}" if planned else str(done)


def _inside_epoch(run_dir: Path, now: float) -> tuple[str, float, float] | None:
    """("step S/N, R it/s", seconds left in the epoch, seconds an epoch of steps takes) from a
    fresh progress.json, else None."""
    try:
        data = json.loads((run_dir / PROGRESS).read_text(encoding="utf-8"))
        step, steps, rate, updated = (int(data["step"]), int(data["steps"]), float(data["steps_per_s"]),
                                      float(data["updated"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if now - updated > STALE_PROGRESS_S or rate <= 0 or steps <= 0:
        return None
    return f"step {step}/{steps}, {rate:.2f} it/s", max(0.0, (steps - step) / rate), steps / rate


def _row_from_files(trial: TrialState, run_dir: Path) -> list[str]:
    """A trial the dead controller left "running", as its summary.json tells it now: completed,
    failed, or interrupted when no live process holds its folder (imf/store/summary.py)."""
    summary = read_summary(run_dir)
    if summary is None:
        return [trial.queue, trial.id, f"{trial.state}? (no summary.json; controller gone)",
                _epochs(trial.epoch, trial.epochs), _score(trial.val_mse), _score(trial.last_score),
                _score(trial.best_score), "-", _duration(trial.elapsed_s), "-"]
    return [trial.queue, trial.id, f"{summary.status} (its files)", f"{summary.epochs_done}/{summary.num_epochs or trial.epochs}",
            _score(trial.val_mse), _score(summary.last_score), _score(summary.best_score),
            "-" if summary.best_success_rate is None else f"{summary.best_success_rate:.2f}",
            _duration(summary.elapsed_s), "-"]


def controller_gone(state: SweepState) -> bool:
    """True when sweep.json says running but its controller's process is not alive on this host."""
    info = state.controller or {}
    pid, host = info.get("pid"), info.get("host")
    if state.status != "running" or not pid or host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError):
        return True
    except PermissionError:
        return False
    return False


def controller_line(state: SweepState, sdir: SweepDir) -> str:
    info = state.controller or {}
    pid, host = info.get("pid"), info.get("host")
    if controller_gone(state):
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(_last_word(sdir)))
        return (f"controller pid {pid} on {host} is not running (gone since {since} at the latest: "
                f"its last write); the trials' states below are their own files'; continue with: "
                f"imf sweep --resume {sdir.path}")
    if state.status == "running":
        return f"controller pid {pid} on {host}"
    if state.status == "interrupted":
        return f"interrupted; continue with: imf sweep --resume {sdir.path}"
    return state.status


def _last_word(sdir: SweepDir) -> float:
    """When the controller last wrote (sweep.json or sweep.log): it died after that."""
    times = [p.stat().st_mtime for p in (sdir.path / SWEEP_STATE, sdir.path / SWEEP_LOG) if p.exists()]
    return max(times) if times else time.time()


def _epoch_bar(trial: TrialState) -> ProgressBar:
    return ProgressBar(total=max(1, trial.epochs), completed=min(trial.epoch, trial.epochs), width=12)


def status_view(sdir: SweepDir, state: SweepState | None = None, now: float | None = None,
                bars: bool = False) -> Group:
    """The sweep's status as rich renderables: notes, then one table row per trial (with an
    epoch bar when ``bars``; a bar says nothing without colour, so plain text has none)."""
    state = state or sdir.load()
    now = time.time() if now is None else now
    done = sum(t.state in FINAL for t in state.trials)
    queue_pos = {q.name: i for i, q in enumerate(state.queues)}
    trials = sorted(state.trials, key=lambda t: (queue_pos.get(t.queue, 0), t.state not in ACTIVE,
                                                 t.state == "pending", t.order))
    rows = []
    gone = controller_gone(state)
    for t in trials:
        row: list = trial_row(t, now, sdir.trial_dir(t.id), gone)
        rows.append(row[:4] + [_epoch_bar(t)] + row[4:] if bars else row)
    headers = list(COLUMNS[:4]) + ([""] if bars else []) + list(COLUMNS[4:])
    lines = [f"sweep {state.name} ({sdir.path}): {done}/{len(state.trials)} ended; "
             f"{controller_line(state, sdir)}"]
    lines += [f"queue {q.name} is {q.state}: {q.reason}" for q in state.queues if q.state != "live"]
    lines += status_lines(state)
    lines += [_out_of_memory_line(t) for t in state.trials
              if any(h.get("outcome") == "out of memory" for h in t.history)]
    lines += [f"orphan of {t.id} on {o.handle.extra.get('host') or o.queue} (pid "
              f"{o.handle.pid}): stopped when its host answers" for t in state.trials
              for o in t.orphans]
    return Group(*(Text(line) for line in lines), table(headers, rows))


def _out_of_memory_line(trial: TrialState) -> str:
    if trial.state in FINAL:
        return f"{trial.id} {trial.state}: {trial.reason}"
    where = [h.get("queue") for h in trial.history if h.get("outcome") == "out of memory"]
    return f"{trial.id}: out of GPU memory on {where[-1]}; retried on {trial.queue}"


def render_status(sdir: SweepDir, state: SweepState | None = None, now: float | None = None) -> str:
    """The status as plain text (``imf status`` in a pipe or a file)."""
    return to_text(status_view(sdir, state, now))


def sweep_over(state: SweepState) -> bool:
    return state.status != "running" or all(t.state in FINAL for t in state.trials)
