"""Every exception imf raises on purpose, in one place.

The CLI turns any ``ImfError`` into one line on stderr and exit code 2, so a
message must say what is wrong, where, and what is allowed.
"""
from __future__ import annotations


class ImfError(Exception):
    """Base of all user-facing imf errors."""


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


class SweepError(ImfError):
    """A sweep plan, queue spec or sweep state is invalid."""


class QueueError(SweepError):
    """A queue slot cannot run jobs (bad spec, unreachable host)."""


class BusyError(QueueError):
    """A job folder still holds a live job of another attempt; ``holder`` is its handle."""

    def __init__(self, message: str, holder: dict | None = None):
        super().__init__(message)
        self.holder = dict(holder or {})


class TrainingError(ImfError):
    """A trial cannot run as configured."""


class ReportError(ImfError):
    """Nothing to report, or run folders that cannot be read."""
