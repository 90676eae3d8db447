"""The run's logs: logs.json.txt and stdout.log (their names: imf/store/layout.py).

logs.json.txt is append-only, one JSON object per line, flushed per line, so
a watcher (the sweep, ``imf status``) can read progress at any moment and a
crash loses at most the line being written.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from imf.atomic import atomic_write_json, atomic_write_text, finite
from imf.errors import DiskFullError, is_disk_full
from imf.store import read_log


class JsonLinesLog:
    """Append-only JSON-lines log of epochs."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        """One line; on a full disk the file is cut back to its last complete line."""
        line = (json.dumps(finite(record)) + "\n").encode("utf-8")
        with self.path.open("ab") as fh:
            size = fh.tell()
            try:
                fh.write(line)
                fh.flush()
            except OSError as exc:
                _cut_back(fh, size)
                if is_disk_full(exc):
                    raise DiskFullError(self.path) from None
                raise

    def read(self) -> list[dict[str, Any]]:
        """Every complete line; a truncated or garbled line (a crash mid-write) is skipped."""
        return read_log(self.path).rows if self.path.exists() else []

    def truncate_after(self, epoch: int) -> int:
        """Drop lines of epochs after ``epoch`` (work a crash lost); return how many."""
        rows = self.read()
        keep = [r for r in rows if r.get("epoch", -1) <= epoch]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in keep))
        return len(rows) - len(keep)


class ProgressFile:
    """progress.json: where the running epoch is (step of steps, steps a second), rewritten at
    most every ``period_s`` seconds, so ``imf status`` shows progress inside a long epoch without
    a controller. A write that fails (a full disk) is skipped: progress is never worth a trial."""

    def __init__(self, path: Path, period_s: float = 5.0) -> None:
        self.path, self.period_s = path, period_s
        self.epoch, self.steps, self.started, self.last = 0, 0, 0.0, 0.0

    def begin(self, epoch: int, steps: int) -> None:
        self.epoch, self.steps = epoch, steps
        self.started = self.last = time.monotonic()

    def tick(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < self.period_s:
            return
        self.last = now
        rate = done / max(now - self.started, 1e-9)
        try:
            atomic_write_json(self.path, {"epoch": self.epoch, "step": done, "steps": self.steps,
                                          "steps_per_s": round(rate, 3), "updated": time.time()})
        except OSError:
            pass


class Tee:
    """Write everything printed to the terminal into stdout.log as well. When the disk is
    full, stdout.log is cut back to its last complete write and left alone from then on (the
    terminal still gets every line); the first such write raises DiskFullError."""

    def __init__(self, path: Path, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.path = path
        self.file: BinaryIO | None = path.open("ab", buffering=0)

    def write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        if self.file is None:
            return
        size = self.file.tell()
        try:
            self.file.write(text.encode("utf-8"))
        except OSError as exc:
            _cut_back(self.file, size)
            self.file.close()
            self.file = None
            if is_disk_full(exc):
                raise DiskFullError(self.path) from None
            raise

    def line(self, text: str) -> None:
        self.write(text + "\n")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _cut_back(handle: BinaryIO, size: int) -> None:
    """Drop a partly written record: the file ends where the last complete one ended."""
    try:
        handle.truncate(size)
    except OSError:
        pass

