"""Files written by an earlier imf, read as today's: one named step per version of a file kind,
applied on load, so no reader holds a branch for an old layout (a leaf anyone may import).

A kind lists its steps oldest first; ``Step(to=N, ...)`` brings a file of version N - 1 to N.
A file without its version key is version 0 (written before its kind had one). A kind with
``key=""`` keeps no version in its files (a config: its keys are the schema's): every step runs
on every read, so its steps must leave today's layout as it is.

``FileKind.read`` says what it did: the steps that changed the file, by name, and a one-line
``note`` for whoever writes the file back. Where a reader may write the file (it owns it), it
writes the upgraded file once, atomically, and says that line (``upgrade_json_file``); where it
may not (a checkpoint, someone else's folder, a file a running process rewrites) it upgrades in
memory and leaves the file alone.
"""
from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

from imf.atomic import atomic_write_json


@dataclass(frozen=True)
class Step:
    to: int  # the version this step makes
    name: str  # what changed, in words
    apply: Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Read:
    """A file brought to today's version: its data, its version before, the steps that changed it."""
    data: dict[str, Any]
    was: int
    changed: tuple[str, ...]

    def note(self, kind: "FileKind", where: str | Path) -> str:
        """One line: what the upgrade changed (empty when nothing did)."""
        if not self.changed:
            return ""
        versions = f" from {kind.stamp(self.was)} to {kind.stamp()}" if kind.key else ""
        return f"{where}: {kind.name} upgraded{versions}: " + "; ".join(self.changed)


@dataclass(frozen=True)
class FileKind:
    """A kind of file and the steps that bring an older one to today's version."""
    name: str  # "loop.json", "checkpoint", ...
    steps: tuple[Step, ...] = ()
    first: int = 1  # the version of the kind's first layout
    key: str = "version"  # "": the files keep no version (every step runs on every read)
    prefix: str = ""  # the version is written as PREFIX + N ("imf-checkpoint-2")

    @property
    def current(self) -> int:
        return self.steps[-1].to if self.steps else self.first

    def stamp(self, version: int | None = None) -> Any:
        """The value of the version key for ``version`` (default: today's)."""
        version = self.current if version is None else version
        return f"{self.prefix}{version}" if self.prefix else version

    def version_of(self, data: dict[str, Any]) -> int | None:
        if not self.key:
            return self._oldest()
        raw = data.get(self.key, self.stamp(0))
        if self.prefix:
            text = raw.removeprefix(self.prefix) if isinstance(raw, str) and raw.startswith(self.prefix) else ""
            return int(text) if text.isdigit() else None
        return raw if isinstance(raw, int) and not isinstance(raw, bool) else None

    def _oldest(self) -> int:
        return min([self.first] + [s.to - 1 for s in self.steps])

    def read(self, data: dict[str, Any], account: bool = True) -> Read:
        """``data`` brought to today's version by the steps after its own (``data`` itself is
        kept), with the names of those that changed it (``account=False``: the names of the steps
        that ran, without comparing before and after); ValueError naming the versions for one
        this imf does not read (newer, older than its first, or no number)."""
        version = self.version_of(data)
        oldest = self._oldest()
        if version is None or not oldest <= version <= self.current:
            found = data.get(self.key)
            raise ValueError(f"{self.key} {found!r}; this imf reads {self.stamp(oldest)} to {self.stamp()}")
        was, changed = version, []
        plain = _plain(data)  # JSON: the steps change one deep copy, and count when they changed it
        compare = account and plain
        if plain and any(version < step.to for step in self.steps):
            data = copy.deepcopy(data)
        for step in self.steps:
            if version < step.to:
                before = json.dumps(data, sort_keys=True) if compare else ""
                data, version = step.apply(data if plain else dict(data)), step.to
                if not compare or json.dumps(data, sort_keys=True) != before:
                    changed.append(step.name)
        if self.key and data.get(self.key) != self.stamp():
            data = {**data, self.key: self.stamp()}
            if not changed and was != self.current:
                changed.append(f"version {self.stamp()} written")
        return Read(data, was, tuple(changed))

    def upgrade(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` at today's version (``read`` without the account of what changed: a config
        runs its steps on every layer of every load, so no before-and-after comparison)."""
        return self.read(data, account=False).data


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON through and through (dicts with text keys, lists, text, numbers,
    None): then the steps get a deep copy to change; a checkpoint's tensors are not copied."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def write_back(path: Path, note: str, write: Callable[[Path], None], say: TextIO | None = None) -> str:
    """Write an upgraded file back once (``write``: atomically, a temp file and a rename, so the
    old file stays whole until the new one is) and say ``note`` on ``say`` (stderr by default).
    A file this process may not write is left as it was: the upgrade then holds in memory only,
    and the note says so. Returns the note as said."""
    try:
        write(path)
    except OSError as exc:
        note += f" (in memory only: {path} is not writable: {exc.strerror or exc})"
    print(note, file=say or sys.stderr)
    return note


def upgrade_json_file(path: Path, kind: FileKind, data: dict[str, Any], say: TextIO | None = None) -> Read:
    """``data`` (read from the JSON file ``path``) upgraded; when that changed it, ``path`` is
    written back once (``write_back``)."""
    read = kind.read(data)
    if read.data != data:
        write_back(path, read.note(kind, path) or f"{path}: {kind.name} upgraded",
                   lambda p: atomic_write_json(p, read.data), say)
    return read
