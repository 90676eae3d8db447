"""Which attempt may run in a job folder: its claim, written before any process of it exists.

``<folder>/claim`` is "TOKEN" (attempt TOKEN owns the folder) or "revoked TOKEN" (attempt TOKEN
never runs there), written whole and renamed. It is read and changed only under the folder's
lock, ``<folder's parent>/.locks/<folder name>`` (flock; it lives beside the folder because the
next start moves an attempt's files, claim included, into ``attempts/N``). The job wrapper
(imf/scheduler/wrapper.py) is its only user:

- ``start`` of attempt T locks, refuses a folder claimed by T already, revoked for T, or claimed
  by a newer attempt, archives the earlier attempt, claims the folder for T, spawns T's job and
  writes its pid file, then unlocks;
- the spawned job (``run``) locks, and runs only while the claim is still T (a resumed
  controller may have revoked T, or started another attempt, while it was starting); it writes
  its pid file before it unlocks;
- ``revoke`` of T locks and answers "started" when T's pid file is there (T runs or ran: the
  controller re-attaches to it), else makes sure T never starts and answers "revoked".

So whatever the timing, a start in flight when its controller died has either started (its pid
file says so) or never will: a resumed controller asks ``revoke`` and then re-attaches or starts
afresh, never both. Tokens of ``new_token`` begin with the time in nanoseconds (16 hex digits),
so a start that arrives after a newer attempt claimed the folder (the ssh client of a dead
controller, say) is refused as well; other tokens are only compared for equality.
"""
from __future__ import annotations

import errno
import fcntl
import os
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from imf.atomic import atomic_write_text, clean_stale_temps
from imf.store import PID

CLAIM = "claim"
LOCKS = ".locks"
REVOKED = "revoked"
TIME_HEX = 16  # the time part of a token
NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)  # a file system without flock


@dataclass(frozen=True)
class Claim:
    token: str
    revoked: bool = False


def new_token(seen: Iterable[str] = ()) -> str:
    """A fresh attempt token, later than the time of every token in ``seen`` (a clock set back
    between two controllers still gives the newer attempt the newer token)."""
    newest = max((t for t in map(token_time, seen) if t is not None), default=0)
    return f"{max(time.time_ns(), newest + 1):0{TIME_HEX}x}{secrets.token_hex(4)}"


def token_time(token: str | None) -> int | None:
    """When ``new_token`` made ``token`` (ns), or None for a token of another kind."""
    if not token or len(token) != TIME_HEX + 8:
        return None
    try:
        int(token, 16)
    except ValueError:
        return None
    return int(token[:TIME_HEX], 16)


def read_claim(folder: Path) -> Claim | None:
    try:
        fields = (Path(folder) / CLAIM).read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    if fields[:1] == [REVOKED] and len(fields) > 1:
        return Claim(fields[1], revoked=True)
    return Claim(fields[0]) if fields else None


def write_claim(folder: Path, token: str, revoked: bool = False) -> None:
    """Claim ``folder`` for ``token`` (or revoke it); the caller holds the folder's lock."""
    folder.mkdir(parents=True, exist_ok=True)
    # A start killed mid-write left its temp claim; claims are written under the lock only, so a
    # temp whose writer is gone is a leftover (a live writer's, or another host's young one, stays).
    clean_stale_temps(folder, only=(CLAIM,))
    atomic_write_text(folder / CLAIM, f"{REVOKED} {token}\n" if revoked else f"{token}\n")


def write_pid(folder: Path, pid: int, started: int | None, token: str) -> None:
    """The job's pid file ("PID STARTTIME TOKEN"), written under the folder's lock like the claim:
    a local controller writes it in its own process, so a temp of one SIGKILLed mid-write, its
    writer gone, is removed first."""
    clean_stale_temps(folder, only=(PID,))
    atomic_write_text(folder / PID, f"{pid} {started} {token}\n")


def refusal(claim: Claim | None, token: str) -> str | None:
    """Why attempt ``token`` may not start under ``claim`` (None: it may)."""
    if claim is None:
        return None
    if claim.token == token:
        return f"attempt {token} was revoked" if claim.revoked else f"attempt {token} started here already"
    mine, theirs = token_time(token), token_time(claim.token)
    if mine is not None and theirs is not None and theirs > mine:
        return f"a newer attempt ({claim.token}) claimed it"
    return None


def owns(folder: Path, token: str) -> bool:
    """May attempt ``token``'s job run in ``folder``? (No claim: a job started without one, by a
    third-party scheduler or an older imf.)"""
    claim = read_claim(folder)
    return claim is None or (claim.token == token and not claim.revoked)


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s claim lock (on a file system without locks, the claim alone decides)."""
    locks = Path(folder).parent / LOCKS
    locks.mkdir(parents=True, exist_ok=True)
    fd = os.open(locks / Path(folder).name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in NO_LOCKS:
                raise
        yield
    finally:
        os.close(fd)
