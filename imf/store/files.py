"""The sidecar lock the stores share; the atomic writer itself is ``imf.atomic``.

A store's read-modify-write holds ``<file>.lock``; holding it, no other writer of that file
is mid-write, so any temp of the file is a leftover and goes.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from imf.atomic import clean_stale_temps
from imf.errors import StoreError

__all__ = ["locked"]
LOCK_TIMEOUT_S = 120.0


@contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the sidecar lock ``<path>.lock`` for a read-modify-write of ``path``."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        with FileLock(str(lock_path), timeout=timeout):
            # No other writer of path is mid-write; the folder may be the user's: only path's temps.
            clean_stale_temps(path.parent, (path.name,), only=(path.name,))
            yield
    except Timeout:
        raise StoreError(f"could not lock {lock_path} within {timeout:.0f} s; another imf "
                         "process holds it (remove the file only if none is running)") from None
