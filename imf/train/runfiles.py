"""The run's logs: logs.json.txt and stdout.log (their names: imf/store/layout.py).

logs.json.txt is append-only, one JSON object per line, flushed per line, so
a watcher (the sweep, ``imf status``) can read progress at any moment and a
crash loses at most the line being written.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from imf.atomic import atomic_write_text, finite
from imf.store.runs import read_log


class JsonLinesLog:
    """Append-only JSON-lines log of epochs."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(finite(record)) + "\n")
            fh.flush()

    def read(self) -> list[dict[str, Any]]:
        """Every complete line; a truncated or garbled line (a crash mid-write) is skipped."""
        return read_log(self.path).rows if self.path.exists() else []

    def truncate_after(self, epoch: int) -> int:
        """Drop lines of epochs after ``epoch`` (work a crash lost); return how many."""
        rows = self.read()
        keep = [r for r in rows if r.get("epoch", -1) <= epoch]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in keep))
        return len(rows) - len(keep)


class Tee:
    """Write everything printed to the terminal into stdout.log as well."""

    def __init__(self, path: Path, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.file = path.open("a", encoding="utf-8", buffering=1)

    def write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        self.file.write(text)

    def line(self, text: str) -> None:
        self.write(text + "\n")

    def close(self) -> None:
        self.file.close()

