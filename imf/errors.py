"""Every exception imf raises on purpose, in one place.

The CLI turns any ``ImfError`` into one line on stderr and its ``exit_code`` (2 unless the
class says otherwise), so a message must say what is wrong, where, and what is allowed.
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

# How a trial's process ends, one code per outcome: `imf trial` exits with it, the sweep's trial
# records keep it, `imf status` shows it (docs/commands.md, "Exit codes"). 128 + N: stopped by signal N.
EXIT_OK = 0  # completed, or stopped early by --patience: a planned end with a result
EXIT_FAILED = 1  # an error inside training or scoring; summary.json says which
EXIT_USAGE = 2  # bad input, refused before anything ran (ImfError)
EXIT_DIVERGED = 3  # the loss diverged: a result exists (the last good checkpoint, if any), no success
EXIT_DISK_FULL = 75  # sysexits' EX_TEMPFAIL: a sweep sees it and blocks the queue, not the trial
EXIT_NO_CUDA = 69  # EX_UNAVAILABLE: training.device asks for CUDA, none here; a sweep marks the queue down
EXIT_GPU_OOM = 71  # out of GPU memory; a sweep retries once on a GPU with more free memory
EXIT_SIGNAL_BASE = 128  # interrupted: 128 + the signal (130 Ctrl-C, 143 SIGTERM); resume it
OUTCOME_EXIT = {"completed": EXIT_OK, "stopped_early": EXIT_OK, "failed": EXIT_FAILED,
                "diverged": EXIT_DIVERGED, "out of memory": EXIT_GPU_OOM, "no CUDA": EXIT_NO_CUDA,
                "disk full": EXIT_DISK_FULL}  # "interrupted": EXIT_SIGNAL_BASE + the signal


class ImfError(Exception):
    """Base of all user-facing imf errors."""

    exit_code = 2


class ConfigError(ImfError):
    """A config key, value, preset or override is invalid."""


class OptionError(ConfigError):
    """A plugin's option with a bad value: raised in an options dataclass's ``__post_init__``
    as ``OptionError("width", "must be >= 1, got 0")``; imf adds where the option lives."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


class PluginError(ImfError):
    """A plugin cannot be found or loaded."""


class UnknownPluginError(PluginError):
    """A plugin name is not installed in its group."""


class DataError(ImfError):
    """A data set is missing, malformed or inconsistent."""


class CheckpointError(ImfError):
    """A checkpoint is missing, corrupt or incompatible."""


class StoreError(ImfError):
    """A result store (scoreboard, iteration log) is unreadable or corrupt."""


class IdentityError(ConfigError):
    """A trial id is already recorded with another config: an id names one config."""


class SweepError(ImfError):
    """A sweep plan, queue spec or sweep state is invalid."""


class QueueError(SweepError):
    """A queue slot cannot run jobs (bad spec, unreachable host)."""


class BusyError(QueueError):
    """A job folder still holds a live job of another attempt; ``holder`` is its handle."""

    def __init__(self, message: str, holder: Any = None):  # holder: a scheduler.base.Handle
        super().__init__(message)
        self.holder = holder


class FolderInUseError(QueueError):
    """A trial's run folder is owned by a live trial not of this attempt (its trial.lock)."""


class TrainingError(ImfError):
    """A trial cannot run as configured."""


class RunBusyError(TrainingError):
    """A run folder is owned by a live trial (its ``trial.lock``); ``holder`` describes it."""

    def __init__(self, message: str, holder: str = ""):
        super().__init__(message)
        self.holder = holder


class NoCudaError(TrainingError):
    """``training.device`` is cuda or cuda:N, and no such CUDA device is usable here."""

    exit_code = EXIT_NO_CUDA


class GpuOutOfMemoryError(TrainingError):
    """The trial ran out of GPU memory; the message names the batch, the peak and what to run."""

    exit_code = EXIT_GPU_OOM


class DiskFullError(ImfError):
    """No space left (or quota exceeded) writing ``path``; what was complete stays complete."""

    exit_code = EXIT_DISK_FULL

    def __init__(self, path: Path | str):
        self.path = Path(path)
        super().__init__(f"no space left on device writing {self.path} ({_free_mb(self.path)} free)")


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def _free_mb(path: Path) -> str:
    folder = path if path.is_dir() else path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return f"{shutil.disk_usage(os.fspath(folder)).free / 1e6:.1f} MB"
    except OSError:
        return "unknown"


class ProgramEvalError(ImfError):
    """A trainer program's eval command failed, ran past its budget or wrote no metric
    (imf/train/program_eval.py): exit 1, with the tail of its log."""

    exit_code = EXIT_FAILED


class ReportError(ImfError):
    """Nothing to report, or run folders that cannot be read."""


class LoopError(ImfError):
    """An ``imf loop`` request or its loop.json is invalid."""


class EnsembleError(ImfError):
    """An ensemble cannot be made from the given source, members or options."""
