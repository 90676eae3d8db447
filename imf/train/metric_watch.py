"""A program's metric followed while it runs (docs/trainers.md, "Per-step metrics").

When the metric comes value after value (a JSON-lines log, or ``name=value`` lines of the
program's output), each new value is mirrored as one row of the run folder's logs.json.txt:
``{"epoch": K, NAME: value, "imf_score": +-value}`` (K counts the values from 0; ``imf_score``
is imf's higher-is-better score, the value negated for goal minimize). A sweep's poll reads
that file on every queue (local, SSH, Slurm): its growth is the trial's progress (stall
detection), its rows are halving's rung scores. A metric file that changes without a new value
adds a ``{"metric_file_bytes": N}`` row, so its growth counts as activity too. ``--patience N``
stops the program after N values without a new best by the goal.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from imf.config import STDOUT, MetricSpec
from imf.store import PROGRAM_SCORE


def per_step(source: str) -> bool:
    """A source whose metric comes value after value: JSON lines or stdout, not one JSON object."""
    return source == STDOUT or not source.endswith(".json")


class MetricWatch:
    """Reads the metric's new complete lines on each ``poll``; mirrors them; judges patience."""

    def __init__(self, spec: MetricSpec, source: Path, mirror: Path | None, patience: int | None = None,
                 se_key: str | None = None) -> None:
        self.spec, self.source, self.mirror, self.patience, self.se_key = spec, source, mirror, patience, se_key
        self.offset = 0
        self.count = 0
        self.best: float | None = None
        self.best_at = 0
        self.seen: tuple[int, int] | None = None  # the source's (size, mtime_ns) at the last poll

    def skip_earlier(self) -> None:
        """A resumed trial: the source's values so far are an earlier attempt's, mirrored already;
        the new ones are numbered on from the rows there."""
        try:
            self.offset = self.source.stat().st_size if per_step(self.spec.source) else 0
        except OSError:
            self.offset = 0
        try:
            rows = self.mirror.read_text(encoding="utf-8", errors="replace").splitlines() if self.mirror else []
        except OSError:
            rows = []
        self.count = sum('"epoch"' in row for row in rows)
        self.best_at = self.count

    def poll(self) -> str | None:
        """Take in what the program wrote since the last poll; the reason to stop it (patience), or None."""
        stepwise = per_step(self.spec.source)
        rows = [row for line in self._new_lines() for row in self._rows(line)] if stepwise else []
        changed = self._changed()
        if self.mirror is not None and (rows or changed):
            extra = [] if rows else [{"metric_file_bytes": self.seen[0] if self.seen else 0}]
            with open(self.mirror, "a", encoding="utf-8") as out:
                out.writelines(json.dumps(row) + "\n" for row in rows + extra)
        if self.patience and self.best is not None and self.count - self.best_at >= self.patience:
            return (f"patience: {self.patience} value(s) of {self.spec.name} without a new best "
                    f"({self.spec.goal}); best {self.best:g} at value {self.best_at} of {self.count}")
        return None

    def _changed(self) -> bool:
        try:
            stat = self.source.stat()
        except OSError:
            return False
        now = (stat.st_size, stat.st_mtime_ns)
        changed, self.seen = now != self.seen, now
        return changed

    def _new_lines(self) -> list[str]:
        try:
            with open(self.source, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        return complete.decode("utf-8", errors="replace").splitlines()

    def _rows(self, line: str) -> list[dict[str, Any]]:
        values, se = self._values(line)
        rows = []
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            row: dict[str, Any] = {"epoch": self.count, self.spec.name: value,
                                   PROGRAM_SCORE: self.spec.sign * value}
            if se is not None:
                row[f"{PROGRAM_SCORE}_se"] = se
            self.count += 1
            if self.best is None or self.spec.sign * value > self.spec.sign * self.best:
                self.best, self.best_at = float(value), self.count
            rows.append(row)
        return rows

    def _values(self, line: str) -> tuple[list[Any], float | None]:
        if self.spec.source == STDOUT:
            pattern = rf"(?:^|[\s,;]){re.escape(self.spec.name)}\s*=\s*(\S+)"
            return [number_or_text(m.group(1).rstrip(",;")) for m in re.finditer(pattern, line)], None
        try:
            row = json.loads(line)
        except ValueError:
            return [], None
        value = metric_key(row, self.spec.name)
        se = metric_key(row, self.se_key) if self.se_key else None
        se = float(se) if isinstance(se, (int, float)) and not isinstance(se, bool) and math.isfinite(se) else None
        return ([] if value is None else [value]), se


def metric_key(data: Any, name: str, missing: Any = None) -> Any:
    """``data[name]``, or along a dotted path (``val.mean_ratio``); ``missing`` where it is not."""
    if isinstance(data, dict) and name in data:
        return data[name]
    node = data
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            return missing
        node = node[part]
    return node


def number_or_text(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text
