"""Crash-safe file writes and the sidecar lock the stores share.

A write goes to a temporary file in the same folder, is fsynced (file and folder)
and then moved into place with ``os.replace``, so a reader sees the old file or the
new one, never half of either. A writer killed mid-write leaves ``.NAME.*.tmp``;
``clean_stale_temps`` removes such leftovers when a store or sweep folder is opened.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Iterator

from filelock import FileLock, Timeout

from imf.errors import StoreError

LOCK_TIMEOUT_S = 120.0
STALE_S = 60.0  # a temp file of another process this old is a leftover of a killed writer
_OURS: set[str] = set()  # temp files this process is writing now
_UMASK_LOCK = threading.Lock()


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync of file and folder, rename).

    A new file gets the mode the umask allows (as ``open`` would); a replaced one keeps its mode.
    """
    path = Path(path)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    _OURS.add(tmp)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        _fsync_dir(path.parent)  # the temp's entry is on disk before the rename needs it
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        _OURS.discard(tmp)
    _fsync_dir(path.parent)


def _umask() -> int:
    """The process umask (read without changing it, where /proc tells it)."""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def clean_stale_temps(folder: Path | str, names: tuple[str, ...] = (), min_age: float = STALE_S) -> int:
    """Remove the atomic writer's leftovers (``.NAME.*.tmp``) in ``folder``: those of ``names``
    whatever their age (call it holding the lock that guards those files), the others once they
    are ``min_age`` seconds old. Temps this process is writing are kept. Returns how many went."""
    removed = 0
    for tmp in Path(folder).glob(".*.tmp"):
        if str(tmp) in _OURS:
            continue
        try:
            age = time.time() - tmp.lstat().st_mtime
        except OSError:
            continue
        if age >= min_age or any(tmp.name.startswith(f".{name}.") for name in names):
            with suppress(OSError):
                tmp.unlink()
                removed += 1
    return removed


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    if not isinstance(text, str):
        raise TypeError(f"atomic_write_text needs a str, got {type(text).__name__}")
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path | str, obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically; NaN and infinities become null."""
    text = json.dumps(_finite(obj), indent=2, allow_nan=False)
    atomic_write_text(path, text + "\n")


def _finite(obj: Any) -> Any:
    """A copy of ``obj`` where non-finite floats are None, so the file stays strict JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {key: _finite(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(value) for value in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable where the OS allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the sidecar lock ``<path>.lock`` for a read-modify-write of ``path``."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        with FileLock(str(lock_path), timeout=timeout):
            clean_stale_temps(path.parent, (path.name,))  # no other writer of path is mid-write
            yield
    except Timeout:
        raise StoreError(f"could not lock {lock_path} within {timeout:.0f} s; another imf "
                         "process holds it (remove the file only if none is running)") from None
