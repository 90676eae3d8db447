"""A remote attempt's folder brought home into the trial's folder on the controller's machine.

``fetch: all`` (the default of a host) brings everything the trial left in its remote folder
but ``attempts/``: swanlog/ (or the other trackers' folders), checkpoints/ with latest.pt,
best.pt and the top-k files, final_eval.json, holdout.json, progress.json, the logs, the
summary and the job wrapper's files, so ``imf report``, ``imf ensemble``, ``swanlab sync`` and
``imf trial --resume`` work on the home folder as on a local one. ``fetch: results`` brings only
RESULTS and best.pt (a host whose checkpoints are too big to copy; they stay there).

While an attempt runs, each new latest.pt comes home with RESUMABLE (``SshScheduler.poll``),
so a trial whose host dies resumes from it on another queue (uploaded to another ssh host's
empty folder by ``SshScheduler.start``).

The tar arrives in a temporary file beside the folder, is unpacked into a temporary folder,
and only then moved in: a fetch cut short leaves the home folder as it was. Files at home of
another attempt (a retry on another queue, an earlier attempt on this one) are moved to
``attempts/N`` first, as the job wrapper does in a folder it starts in again; a second fetch
of the same attempt replaces its files.
"""
from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from imf.errors import QueueError
from imf.scheduler.wrapper import STARTED, read_files
from imf.store import (BEST, CONFIG, EXIT_CODE, FINAL_EVAL, HOLDOUT, LATEST, LOGS, PID, STDOUT, SUMMARY,
                       TRIAL_FILES, RunLayout, checkpoint_name)

MODES = ("all", "results")
RESULTS = (SUMMARY, LOGS, STDOUT, CONFIG, EXIT_CODE, PID, checkpoint_name(BEST), FINAL_EVAL, HOLDOUT)
# what a trial needs to resume elsewhere (imf trial --resume), kept home while it runs
RESUMABLE = (CONFIG, SUMMARY, LOGS, checkpoint_name(LATEST))


def fetch_mode(spec: str, value: object) -> str:
    """A host's ``fetch`` option: "all" (the default) or "results"; QueueError otherwise."""
    mode = "all" if value is None else value
    if mode not in MODES:
        raise QueueError(f"queue '{spec}': fetch {value!r}: expected one of {', '.join(MODES)} "
                         f"(all: everything the trial leaves; results: its summary, logs and best.pt)")
    return str(mode)


def temporary(dest: Path, what: str) -> Path:
    """A temporary path beside ``dest`` (same file system: moves are renames); any left by a
    fetch that was cut short is removed."""
    path = dest.parent / f".{dest.name}.{what}.tmp"
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    return path


def install(tar_path: Path, dest: Path, token: str, replace: bool = True) -> None:
    """Unpack the tar at ``tar_path`` (an attempt ``token``'s files) into ``dest``. ``replace``:
    each top-level entry replaces the one at home (the whole folder came); else files merge in."""
    staging = temporary(dest, "fetch")
    staging.mkdir(parents=True)
    try:
        with tarfile.open(tar_path) as tar:
            tar.extractall(staging, filter="data")
    except (tarfile.TarError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise QueueError(f"fetching into {dest} failed: {type(exc).__name__}: {exc}") from None
    dest.mkdir(parents=True, exist_ok=True)
    if _other_attempt(dest, token):
        RunLayout(dest).archive_attempt(tuple({*STARTED, *TRIAL_FILES}), everything=True)
    _move_in(staging, dest, replace)
    shutil.rmtree(staging, ignore_errors=True)


def _other_attempt(dest: Path, token: str) -> bool:
    """``dest`` holds files of an attempt other than ``token``'s."""
    if read_files(dest).token == token:
        return False
    return any((dest / name).exists() for name in {*STARTED, *TRIAL_FILES})


def _move_in(staging: Path, dest: Path, replace: bool) -> None:
    for entry in sorted(staging.iterdir()):
        target = dest / entry.name
        if entry.is_dir() and not entry.is_symlink() and not replace and target.is_dir():
            _move_in(entry, target, replace)
            continue
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        entry.rename(target)
