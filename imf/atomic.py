"""Crash-safe writes (temp path, fsync, rename) and the cleanup of temps a killed writer left.

Every file or folder imf writes for others to read goes through ``atomic_path``: the writer
fills a temp path in the same folder, which is fsynced (file and folder) and renamed onto the
target, so a reader sees the old version or the new one, never half of either.

Temps are named ``.<name>.<pid>@<host>.<token>.tmp``. ``clean_stale_temps`` removes a temp when
the process that wrote it is gone: its pid no longer runs on this host. A temp of a running
process is kept whatever its age. Temps of another host (a shared file system) and temps in
the older unnamed form ``.<name>.<random>.tmp`` cannot be checked that way and go once they
are ``STALE_S`` seconds old.
"""
from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import socket
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Iterator

from imf.errors import DiskFullError, is_disk_full

STALE_S = 60.0
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)@(?P<host>[^/@]*)\.[0-9a-f]{8}\.tmp$")


def temp_path(path: Path) -> Path:
    """A fresh temp name beside ``path`` that names this process (see the module's docstring)."""
    return path.with_name(f".{path.name}.{os.getpid()}@{socket.gethostname()}.{secrets.token_hex(4)}.tmp")


@contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temp path beside ``path`` for the caller to write a file or a folder at; on a
    clean exit it is fsynced and renamed onto ``path`` (a folder replaces an old folder or
    file), on an exception removed. The caller creates the temp, so a new file gets the
    permissions the user's umask gives; a file replacing another keeps the old one's mode.
    A full disk is a ``DiskFullError`` naming ``path``; the old version stays as it was."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        yield tmp
        if path.is_file() and tmp.is_file():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        _fsync_tree(tmp)
        fsync_dir(path.parent)  # the temp's entry is on disk before the rename needs it
        _replace(tmp, path)
    except BaseException as exc:
        _remove(tmp)
        if is_disk_full(exc):
            raise DiskFullError(path) from None
        raise
    fsync_dir(path.parent)


def _replace(tmp: Path, path: Path) -> None:
    if not tmp.is_dir() or not (path.exists() or path.is_symlink()):
        os.replace(tmp, path)
        return
    aside = temp_path(path)  # a folder cannot be renamed over one: move the old one aside first
    os.replace(path, aside)
    os.replace(tmp, path)
    _remove(aside)


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp, open(tmp, "xb") as handle:
        handle.write(data)


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    if not isinstance(text, str):
        raise TypeError(f"atomic_write_text needs a str, got {type(text).__name__}")
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path | str, obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically; NaN and infinities become null."""
    text = json.dumps(finite(obj), indent=2, allow_nan=False)
    atomic_write_text(path, text + "\n")


def finite(obj: Any) -> Any:
    """A copy of ``obj`` where non-finite floats are None and paths are strings (strict JSON)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {key: finite(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(value) for value in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _fsync_path(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if is_disk_full(exc):
            raise  # the data did not reach the disk
        # some file systems refuse fsync on a folder
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """Make the entries of ``folder`` (a rename into it) durable where the OS allows it."""
    _fsync_path(folder)


def _fsync_tree(path: Path) -> None:
    if not path.is_dir():
        _fsync_path(path)
        return
    for folder, _, files in os.walk(path, topdown=False):
        for name in files:
            _fsync_path(Path(folder) / name)
        _fsync_path(Path(folder))


def _remove(path: Path) -> None:
    with suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def is_stale(tmp: Path, names: tuple[str, ...] = (), min_age: float = STALE_S) -> bool:
    """True when ``tmp`` (a temp of the atomic writer) is a leftover: see the module's docstring.
    A temp of ``names`` not written by this process is a leftover whatever its writer: call it
    holding the lock that guards those files."""
    match = _TEMP.match(tmp.name)
    if match and int(match["pid"]) == os.getpid() and match["host"] == socket.gethostname():
        return False  # this process is writing it now
    if any(tmp.name.startswith(f".{name}.") for name in names):
        return True
    if match and match["host"] == socket.gethostname():
        return not _pid_running(int(match["pid"]))
    try:
        return time.time() - tmp.lstat().st_mtime >= min_age
    except OSError:
        return False


def clean_stale_temps(folder: Path | str, names: tuple[str, ...] = (), min_age: float = STALE_S,
                      only: tuple[str, ...] | None = None) -> int:
    """Remove the atomic writer's leftovers (``.*.tmp`` files and folders) in ``folder``, of
    the files named in ``only`` when given (a folder imf does not own); return how many went."""
    removed = 0
    for tmp in Path(folder).glob(".*.tmp"):
        if only is not None and not any(tmp.name.startswith(f".{name}.") for name in only):
            continue
        if is_stale(tmp, names, min_age):
            _remove(tmp)
            removed += not (tmp.exists() or tmp.is_symlink())
    return removed
