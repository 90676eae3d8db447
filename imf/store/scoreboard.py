"""The ``scoreboard`` store: ``scoreboard.json`` with the best trial and every trial.

Layout (plain JSON, readable without imf)::

    {"metric": "test_mean_score",
     "best": {"metric", "value", "trial", "checkpoint", "config", "time"} | null,
     "trials": [{"id", "overrides", "score", "epochs", "elapsed", "warm_started",
                 "diverged", "stopped_early", "status", "note", "time",
                 "checkpoint", "config", "run_dir"}, ...],
     "updated": iso-time}

Every record is a read-modify-write under ``scoreboard.json.lock``. A file that
does not parse is reported and never overwritten.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from imf.errors import StoreError
from imf.store.base import BEST_METRIC, best_of, normalize_record, now_iso
from imf.store.files import atomic_write_json, locked

FILENAME = "scoreboard.json"


class ScoreboardStore:
    """Best trial and every trial of a sweep (or runs folder) in ``root/scoreboard.json``."""

    name = "scoreboard"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / FILENAME

    def record(self, record: dict[str, Any]) -> None:
        """Upsert ``record`` by id and recompute ``best``."""
        entry = normalize_record(record)
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            board = self.load()
            trials = board["trials"]
            for index, trial in enumerate(trials):
                if trial["id"] == entry["id"]:
                    trials[index] = entry
                    break
            else:
                trials.append(entry)
            board["best"] = best_of(trials)
            board["updated"] = now_iso()
            atomic_write_json(self.path, board)

    def read(self) -> list[dict[str, Any]]:
        """Every trial, in the order first recorded."""
        return self.load()["trials"]

    def best(self) -> dict[str, Any] | None:
        """The ``best`` entry, or None while no trial has a score."""
        return self.load()["best"]

    def load(self) -> dict[str, Any]:
        """The whole scoreboard; an empty one if the file does not exist yet."""
        if not self.path.exists():
            return {"metric": BEST_METRIC, "best": None, "trials": [], "updated": None}
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read scoreboard {self.path}: {exc}") from None
        try:
            board = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._corrupt(f"not valid JSON ({exc.msg} at line {exc.lineno} "
                                f"column {exc.colno})") from None
        self._check(board)
        return board

    def _check(self, board: Any) -> None:
        if not isinstance(board, dict):
            raise self._corrupt(f"top level is a {type(board).__name__}, expected an object")
        trials = board.get("trials")
        if not isinstance(trials, list):
            raise self._corrupt("'trials' is missing or not a list")
        for index, trial in enumerate(trials):
            if not isinstance(trial, dict) or not isinstance(trial.get("id"), str):
                raise self._corrupt(f"trials[{index}] is not an object with a string 'id'")
        board.setdefault("metric", BEST_METRIC)
        board.setdefault("best", None)

    def _corrupt(self, what: str) -> StoreError:
        return StoreError(f"scoreboard {self.path} is corrupt: {what}; it was left untouched "
                          "(fix it or move it aside)")
