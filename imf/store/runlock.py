"""Who owns a run folder: ``trial.lock``, held by the one process that writes the folder.

A trial (training, a ``--resume``, a final eval) takes the lock before it changes anything in
its folder and removes it when it ends. The file is one line, readable by the sweep's sh job
scripts as well: ``PID STARTTIME HOST SINCE TRIAL_ID`` (STARTTIME: field 22 of
/proc/PID/stat, so a reused pid is not mistaken for the holder).

A lock is *stale*, and may be taken over, when its holder is gone: on this host, the process
with that pid and start time no longer runs; on another host (a shared file system), the
holder has not touched the file for ``REMOTE_STALE_S`` seconds (a live holder touches it every
``HEARTBEAT_S``). The takeover is made under an exclusive ``flock`` of the folder, so two
processes cannot both take one stale lock.
"""
from __future__ import annotations

import fcntl
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from imf.atomic import atomic_write_text
from imf.clock import now_iso
from imf.errors import RunBusyError
from imf.store.layout import LOCK

HEARTBEAT_S = 30.0
REMOTE_STALE_S = 300.0


@dataclass(frozen=True)
class Holder:
    pid: int
    start_time: str
    host: str
    since: str
    trial_id: str

    def line(self) -> str:
        return f"{self.pid} {self.start_time} {self.host} {self.since} {self.trial_id}\n"

    def describe(self) -> str:
        return f"trial {self.trial_id} (pid {self.pid} on {self.host}, since {self.since})"


def process_start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot), or None when there is no process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if not fields or fields[0] == "Z":
        return None  # a zombie has ended
    return fields[19] if len(fields) > 19 else None


def read_holder(folder: Path) -> Holder | None:
    """The lock's holder as written (None when there is no lock or it is unreadable)."""
    try:
        parts = (Path(folder) / LOCK).read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(parts) < 5 or not parts[0].isdigit():
        return None
    return Holder(int(parts[0]), parts[1], parts[2], parts[3], " ".join(parts[4:]))


def live_holder(folder: Path) -> Holder | None:
    """The holder of ``folder``'s lock while it is alive (see the module's docstring)."""
    lock = Path(folder) / LOCK
    holder = read_holder(folder)
    if holder is not None and holder.host == socket.gethostname():
        return holder if process_start_time(holder.pid) == holder.start_time else None
    # another host's, or written but unreadable: trusted while touched within REMOTE_STALE_S
    try:
        fresh = time.time() - lock.stat().st_mtime < REMOTE_STALE_S
    except OSError:  # no lock at all
        return None
    return (holder or Holder(0, "?", "?", "?", "?")) if fresh else None


class RunLock:
    """The lock of one run folder, held by this process (re-entrant within it)."""

    _held: dict[Path, "RunLock"] = {}
    _guard = threading.Lock()

    def __init__(self, folder: Path, trial_id: str):
        self.folder, self.trial_id = Path(folder), trial_id
        self.depth = 0
        self.created_folder = False
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    @classmethod
    def acquire(cls, folder: Path | str, trial_id: str) -> "RunLock":
        """Take ``folder``'s lock (creating the folder), or raise RunBusyError naming the live
        holder; nothing in the folder changes when it is refused."""
        folder = Path(folder)
        key = folder.resolve()
        with cls._guard:
            mine = cls._held.get(key)
            if mine is not None:
                mine.depth += 1
                return mine
            lock = cls(folder, trial_id)
            lock.created_folder = not folder.exists()
            folder.mkdir(parents=True, exist_ok=True)
            try:
                lock._take()
            except BaseException:
                if lock.created_folder:
                    _rmdir_if_empty(folder)
                raise
            lock.depth = 1
            cls._held[key] = lock
        lock._beat = threading.Thread(target=lock._heartbeat, name="imf-run-lock", daemon=True)
        lock._beat.start()
        return lock

    def _take(self) -> None:

        me = Holder(os.getpid(), process_start_time(os.getpid()) or "0", socket.gethostname(),
                    now_iso(), self.trial_id)
        fd = os.open(self.folder, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one taker at a time; released when fd closes
            holder = live_holder(self.folder)
            if holder is not None:
                raise RunBusyError(
                    f"run folder {self.folder} is in use by {holder.describe()}; wait for it to "
                    f"end or stop it, then try again (nothing in the folder was changed)", holder.describe())
            atomic_write_text(self.folder / LOCK, me.line())
        finally:
            os.close(fd)

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.folder / LOCK)
            except OSError:
                pass  # the folder is gone or read-only now: nothing to keep fresh

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        with self._guard:
            self.depth -= 1
            if self.depth > 0:
                return
            self._held.pop(self.folder.resolve(), None)
        self._stop.set()
        holder = read_holder(self.folder)
        if holder is not None and holder.pid == os.getpid() and holder.host == socket.gethostname():
            try:
                (self.folder / LOCK).unlink()
            except OSError:
                pass
        if self.created_folder:
            _rmdir_if_empty(self.folder)


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
