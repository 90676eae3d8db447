"""The ``iteration-log`` store: ``ITERATION_LOG.md``, a markdown lab notebook.

One line per attempt of a trial, replaced in place when that attempt is recorded again (a
second attempt says so, and a trial run for a hypothesis names it)::

    - 2026-05-01T10:00:00+00:00 | trial `s-e256-l12` | score 0.81 | first score | completed |
    - 2026-05-01T11:00:00+00:00 | trial `s-e256-l12` attempt 2 for H3 | score 0.79 | ... |

and numbered hypothesis blocks, written by ``imf log hypothesis`` and filled by
``imf log conclude``::

    ### H1 - 2026-05-01T09:00:00+00:00
    - **Hypothesis:** full attention beats causal
    - **Expectation:** +0.05 test_mean_score
    - **Command:** `imf sweep --mask full --grid 128,256x6,12`
    - **Result:** (pending)
    - **Conclusion:** (pending)

Lines imf does not recognise are kept as they are, so the file can be edited by hand.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_text
from imf.errors import StoreError
from imf.clock import now_iso
from imf.store.base import normalize_record
from imf.store.files import locked

FILENAME = "ITERATION_LOG.md"
HEADER = """# Iteration log

Trials, one line each: time | trial | score | change against the best so far | status | note.
Hypotheses: `### H<n>` blocks from `imf log hypothesis`, filled in by `imf log conclude`.
"""
FIELDS = ("Hypothesis", "Expectation", "Command", "Result", "Conclusion")
PENDING = "(pending)"
NONE = "(none)"

_TRIAL_RE = re.compile(r"^- (?P<time>\S+) \| trial `(?P<id>[^`]+)`(?: attempt (?P<attempt>\d+))?"
                       r"(?: for (?P<hypothesis>H\d+))? \| score (?P<score>\S+) \| "
                       r"(?P<change>[^|]*?) \| (?P<status>[^|]*?) \|(?: (?P<note>.*))?$")
_HEAD_RE = re.compile(r"^### H(?P<num>\d+)(?: - (?P<time>.*))?$")
_FIELD_RE = re.compile(r"^- \*\*(?P<name>[A-Za-z]+):\*\* ?(?P<value>.*)$")


class IterationLogStore:
    """Trial lines and hypothesis blocks in ``root/ITERATION_LOG.md``."""

    name = "iteration-log"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / FILENAME

    # trials -----------------------------------------------------------------
    def record(self, record: dict[str, Any]) -> None:
        """Write the trial's line, replacing the line of the same attempt of the same trial."""
        entry = normalize_record(record)
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            lines = self._lines()
            parsed = [parse_trial_line(line) for line in lines]
            attempt = entry["attempt"] or 1
            index = next((i for i, t in enumerate(parsed)
                          if t and t["id"] == entry["id"] and t["attempt"] == attempt), None)
            best = max((t["score"] for i, t in enumerate(parsed)
                        if t and i != index and t["score"] is not None), default=None)
            line = format_trial_line(entry, best)
            if index is None:
                if lines and lines[-1].strip() and not parsed[-1]:
                    lines.append("")  # keep the line out of a preceding block or paragraph
                lines.append(line)
            else:
                lines[index] = line
            self._write(lines)

    def read(self) -> list[dict[str, Any]]:
        """Every trial line, in file order: time, id, score, change, status, note."""
        return [t for line in self._lines() if (t := parse_trial_line(line))]

    # hypotheses -------------------------------------------------------------
    def hypotheses(self) -> list[dict[str, Any]]:
        """Every hypothesis block: id, time and the fields (None where pending)."""
        return [block for _, _, block in find_blocks(self._lines())]

    def add_hypothesis(self, text: str, expect: str, command: str | None = None) -> str:
        """Append a new block and return its id (H1, H2, ...)."""
        fields = {"Hypothesis": _required(text, "--text"),
                  "Expectation": _required(expect, "--expect"),
                  "Command": command.strip() if command and command.strip() else None,
                  "Result": None, "Conclusion": None}
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            lines = self._lines()
            number = 1 + max((int(b["id"][1:]) for _, _, b in find_blocks(lines)), default=0)
            if lines and lines[-1].strip():
                lines.append("")
            lines.extend(format_block(number, now_iso(), fields))
            lines.append("")
            self._write(lines)
        return f"H{number}"

    def conclude(self, hypothesis_id: str, result: str, conclusion: str) -> dict[str, Any]:
        """Fill the result and conclusion of a block, the result citing the trials recorded for
        it (``imf trial --hypothesis H3``, a loop round's trials); returns the updated block."""
        number = _parse_hypothesis_id(hypothesis_id)
        result, conclusion = _required(result, "--result"), _required(conclusion, "--conclusion")
        with locked(self.path):
            lines = self._lines()
            tested = [t for t in (parse_trial_line(line) for line in lines) if t and t["hypothesis"] == f"H{number}"]
            if tested:
                result += "\ntrials: " + ", ".join(
                    t["id"] + (f" (attempt {t['attempt']})" if t["attempt"] > 1 else "") for t in tested)
            blocks = find_blocks(lines)
            match = [(s, e, b) for s, e, b in blocks if b["id"] == f"H{number}"]
            if not match:
                known = ", ".join(b["id"] for _, _, b in blocks) or "none yet"
                raise StoreError(f"no hypothesis H{number} in {self.path}; ids: {known}")
            start, end, block = match[0]
            fields = {name: block[name.lower()] for name in FIELDS}
            fields.update(Result=result, Conclusion=conclusion)
            lines[start:end] = format_block(number, block["time"], fields)
            self._write(lines)
        return {**block, "result": result, "conclusion": conclusion}

    # file -------------------------------------------------------------------
    def _lines(self) -> list[str]:
        if not self.path.exists():
            return HEADER.splitlines() + [""]
        try:
            return self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read iteration log {self.path}: {exc}") from None

    def _write(self, lines: list[str]) -> None:
        atomic_write_text(self.path, "\n".join(lines).rstrip("\n") + "\n")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _required(value: str | None, option: str) -> str:
    if value is None or not str(value).strip():
        raise StoreError(f"{option} must not be empty")
    return str(value).strip()


def _parse_hypothesis_id(text: str) -> int:
    match = re.fullmatch(r"[Hh]?(\d+)", str(text).strip())
    if not match:
        raise StoreError(f"hypothesis id {text!r} is not valid; use H1, H2, ... (or 1, 2, ...)")
    return int(match.group(1))


def _change(score: float | None, best: float | None) -> str:
    if score is None:
        return "no score"
    if best is None:
        return "first score"
    delta = f"{score - best:+.4f} vs best {best:.4f}"
    return delta + " (new best)" if score > best else delta


def format_trial_line(entry: dict[str, Any], best: float | None) -> str:
    """The markdown line of one trial; ``best`` is the best score of the other trials."""
    score = entry["score"]
    attempt = entry.get("attempt") or 1
    hypothesis = entry.get("hypothesis")
    text = (f"- {entry['time']} | trial `{entry['id']}`" + (f" attempt {attempt}" if attempt > 1 else "")
            + (f" for {hypothesis}" if hypothesis else "") + " | "
            f"score {'-' if score is None else f'{score:.4f}'} | {_change(score, best)} | "
            f"{_one_line(entry['status']).replace('|', '/')} |")
    note = _one_line(entry["note"])
    return f"{text} {note}" if note else text


def parse_trial_line(line: str) -> dict[str, Any] | None:
    """The trial a line describes, or None when it is not a trial line."""
    match = _TRIAL_RE.match(line.rstrip())
    if not match:
        return None
    try:
        score = None if match["score"] == "-" else float(match["score"])
    except ValueError:
        return None
    return {"time": match["time"], "id": match["id"], "attempt": int(match["attempt"] or 1),
            "hypothesis": match["hypothesis"], "score": score,
            "change": match["change"], "status": match["status"], "note": match["note"] or ""}


def _format_value(name: str, value: str | None) -> list[str]:
    if value is None:
        value = PENDING if name in ("Result", "Conclusion") else NONE
    elif name == "Command":
        value = f"`` {value} ``" if "`" in value else f"`{value}`"
    first, *rest = str(value).splitlines() or [""]
    return [f"- **{name}:** {first}"] + [f"  {line}" for line in rest]


def format_block(number: int, time: str | None, fields: dict[str, str | None]) -> list[str]:
    """The markdown lines of hypothesis block ``H<number>``."""
    lines = [f"### H{number}" + (f" - {time}" if time else "")]
    for name in FIELDS:
        lines.extend(_format_value(name, fields.get(name)))
    return lines


def _parse_value(name: str, value: str) -> str | None:
    if value in (PENDING, NONE):
        return None
    if name == "Command":
        if value.startswith("`` ") and value.endswith(" ``"):
            return value[3:-3]
        if len(value) >= 2 and value[0] == value[-1] == "`":
            return value[1:-1]
    return value


def find_blocks(lines: list[str]) -> list[tuple[int, int, dict[str, Any]]]:
    """(start, end, block) for every hypothesis block; ``lines[start:end]`` is the block."""
    blocks = []
    for start, line in enumerate(lines):
        head = _HEAD_RE.match(line.rstrip())
        if not head:
            continue
        values: dict[str, list[str]] = {}
        end, current = start + 1, None
        while end < len(lines):
            field = _FIELD_RE.match(lines[end])
            if field and field["name"] in FIELDS:
                current = field["name"]
                values[current] = [field["value"]]
            elif current and lines[end].startswith("  ") and lines[end].strip():
                values[current].append(lines[end][2:])
            else:
                break
            end += 1
        block = {"id": f"H{int(head['num'])}", "time": head["time"]}
        for name in FIELDS:
            raw = "\n".join(values[name]) if name in values else PENDING
            block[name.lower()] = _parse_value(name, raw)
        blocks.append((start, end, block))
    return blocks
