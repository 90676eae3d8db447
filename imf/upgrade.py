"""Files written by an earlier imf, read as today's: one named step per version of a file kind,
applied on load, so no reader holds a branch for an old layout (a leaf anyone may import).

A kind lists its steps oldest first; ``Step(to=N, ...)`` brings a file of version N - 1 to N.
A file without its version key is version 0 (written before its kind had one).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Step:
    to: int  # the version this step makes
    name: str  # what changed, in words
    apply: Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class FileKind:
    """A kind of file and the steps that bring an older one to today's version."""
    name: str  # "loop.json", "checkpoint", ...
    steps: tuple[Step, ...] = ()
    first: int = 1  # the version of the kind's first layout
    key: str = "version"
    prefix: str = ""  # the version is written as PREFIX + N ("imf-checkpoint-2")

    @property
    def current(self) -> int:
        return self.steps[-1].to if self.steps else self.first

    def stamp(self, version: int | None = None) -> Any:
        """The value of the version key for ``version`` (default: today's)."""
        version = self.current if version is None else version
        return f"{self.prefix}{version}" if self.prefix else version

    def version_of(self, data: dict[str, Any]) -> int | None:
        raw = data.get(self.key, self.stamp(0))
        if self.prefix:
            text = raw.removeprefix(self.prefix) if isinstance(raw, str) and raw.startswith(self.prefix) else ""
            return int(text) if text.isdigit() else None
        return raw if isinstance(raw, int) and not isinstance(raw, bool) else None

    def upgrade(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` brought to today's version by the steps after its own; ValueError naming the
        versions for one this imf does not read (newer, older than its first, or no number)."""
        version = self.version_of(data)
        oldest = min([self.first] + [s.to - 1 for s in self.steps])
        if version is None or not oldest <= version <= self.current:
            found = data.get(self.key)
            raise ValueError(f"{self.key} {found!r}; this imf reads {self.stamp(oldest)} to {self.stamp()}")
        for step in self.steps:
            if version < step.to:
                data, version = step.apply(dict(data)), step.to
                data[self.key] = self.stamp(version)
        return data
