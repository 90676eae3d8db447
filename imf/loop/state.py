"""loop.json: what ``imf loop`` decided, round by round, so a killed loop resumes where it was.

The file is rewritten whole and renamed (imf.atomic) after every decision: a round's proposals
before its hypothesis is written, the hypothesis id before its sweep starts, the results and
conclusions once the sweep ended. Each round's trials run in a sweep folder of their own
(``loop-rNN`` inside the loop's folder), which resumes like any sweep.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from imf import drill
from imf.atomic import atomic_write_json
from imf.errors import LoopError
from imf.upgrade import FileKind, Step, write_back

LOOP_FILE = "loop.json"


def _selection_named(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 kept an outcome's selection-seed score as "fresh"."""
    for round_ in data.get("rounds") or []:
        for outcome in (round_.get("outcomes") or []) if isinstance(round_, dict) else []:
            if isinstance(outcome, dict) and "fresh" in outcome:
                outcome["selection"] = outcome.pop("fresh")
    return data


KIND = FileKind(LOOP_FILE, (Step(2, "an outcome's selection score is 'selection', not 'fresh'", _selection_named),))
VERSION = KIND.current


@dataclass
class Planned:
    """One proposal of a round, as the round's sweep runs it."""
    id: str
    kind: str  # "seeds", "neighbour", "continue", "more-data", "curriculum"
    reason: str
    config: str  # the config.yaml of the run it builds on (absolute)
    overrides: list[str]
    seed: int
    init_from: str | None = None


@dataclass
class Outcome:
    """A proposal's result against the best before its round."""
    id: str
    status: str
    score: float | None = None
    se: float | None = None
    success: float | None = None
    selection: float | None = None
    diff: float | None = None  # score - the best cell's mean before the round
    diff_se: float | None = None
    verdict: str = "no result"  # "better", "worse", "no clear difference", "no result"
    cell: str | None = None  # the report's cell of the run (its seeds' mean is the cell's)


@dataclass
class Round:
    number: int
    sweep: str  # its sweep folder, inside the loop's folder
    best_before: dict[str, Any]  # label, mean, se, n, trial: the best cell when it was planned
    proposals: list[Planned] = field(default_factory=list)
    hypothesis: str | None = None  # its block in ITERATION_LOG.md (H<n>)
    status: str = "planned"  # planned, running, concluded
    outcomes: list[Outcome] = field(default_factory=list)
    gain: bool | None = None  # a proposal beat the best beyond noise
    best_after: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Round":
        data = dict(data)
        data["proposals"] = [Planned(**p) for p in data.get("proposals", [])]
        data["outcomes"] = [Outcome(**o) for o in data.get("outcomes", [])]
        return cls(**data)


@dataclass
class LoopState:
    queues: list[str]
    rounds_max: int
    per_round: int = 3
    hours: float | None = None
    hosts: str | None = None
    final_eval: int | None = None
    started_unix: float = 0.0
    status: str = "running"  # running, interrupted, finished
    stop_reason: str = ""
    rounds: list[Round] = field(default_factory=list)
    version: int = VERSION

    def open_round(self) -> Round | None:
        """The round that was planned but not concluded (a loop stopped in its middle)."""
        last = self.rounds[-1] if self.rounds else None
        return last if last is not None and last.status != "concluded" else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LoopState":
        data = dict(data)
        data["rounds"] = [Round.from_dict(r) for r in data.get("rounds", [])]
        return cls(**data)


def load_loop(folder: Path) -> LoopState:
    path = Path(folder) / LOOP_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LoopError(f"{folder}: no {LOOP_FILE} here; start a loop with imf loop {folder} "
                           "--rounds N --queue SPEC") from None
    except (OSError, ValueError) as exc:
        raise LoopError(f"{path}: unreadable loop state ({exc})") from None
    if not isinstance(data, dict):
        raise LoopError(f"{path}: loop state must be a JSON object, got {type(data).__name__}")
    try:
        read = KIND.read(data)
    except ValueError as exc:
        raise LoopError(f"{path}: loop state {exc}") from None
    try:
        state = LoopState.from_dict(read.data)
    except (TypeError, KeyError) as exc:
        raise LoopError(f"{path}: damaged loop state ({exc})") from None
    if read.data != data:  # only the loop that resumes reads it: the upgrade is written back once
        write_back(path, read.note(KIND, path), lambda p: atomic_write_json(p, read.data))
    return state


def save_loop(folder: Path, state: LoopState) -> None:
    atomic_write_json(Path(folder) / LOOP_FILE, asdict(state))
    drill.point("loop-saved")
