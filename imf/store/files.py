"""Crash-safe file writes and the sidecar lock the stores share.

A write goes to a temporary file in the same folder, is fsynced and then moved
into place with ``os.replace``, so a reader sees the old file or the new one,
never half of either.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Iterator

from filelock import FileLock, Timeout

from imf.errors import StoreError

LOCK_TIMEOUT_S = 120.0


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, ``os.replace``)."""
    path = Path(path)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


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
            yield
    except Timeout:
        raise StoreError(f"could not lock {lock_path} within {timeout:.0f} s; another imf "
                         "process holds it (remove the file only if none is running)") from None
