"""The ``scoreboard`` store: ``scoreboard.json`` with the best trial and every trial.

Layout (plain JSON, readable without imf)::

    {"metric": "test_mean_score",
     "best": {"metric", "value", "trial", "checkpoint", "config", "time"} | null,
     "trials": [{"id", "attempt", "overrides", "score", "epochs", "elapsed", "warm_started",
                 "diverged", "stopped_early", "status", "note", "time",
                 "checkpoint", "config", "run_dir", "seed", "init_from", "init_hash",
                 "config_hash", "cell", "run_uid", "hypothesis"}, ...],

One entry per attempt of a trial (``imf.store.base.same_attempt``); an id names one config.
     "updated": iso-time}

Every record is a read-modify-write under ``scoreboard.json.lock``. A file that
does not parse is reported and never overwritten. ``checkpoint`` and ``run_dir`` are stored
relative to the scoreboard's folder (when inside it), so a copied or moved folder reads its own
files; ``read`` and ``best`` give them back absolute, under the folder the file is in now.
Absolute paths written by older versions are read the same way (rebased on the folder that
held their ``run_dir``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_json
from imf.errors import StoreError
from imf.clock import now_iso
from imf.store.base import BEST_METRIC, best_of, identity_clash, normalize_record, number_attempt, same_attempt
from imf.store.files import locked

FILENAME = "scoreboard.json"


class ScoreboardStore:
    """Best trial and every trial of a sweep (or runs folder) in ``root/scoreboard.json``."""

    name = "scoreboard"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / FILENAME

    def record(self, record: dict[str, Any]) -> None:
        """Upsert ``record`` by attempt (its id and run_uid), numbering a new attempt, and
        recompute ``best``; an id recorded with another config is refused."""
        entry = self._relative(normalize_record(record))
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            board = self.load()
            trials = board["trials"]
            clash = identity_clash(trials, entry)
            if clash is not None:
                raise StoreError(f"{self.path}: trial id '{entry['id']}' is already recorded with another "
                                 f"config (hash {clash['config_hash']}, this one {entry['config_hash']}); "
                                 "a trial id names one config")
            entry["attempt"] = entry["attempt"] or number_attempt(trials, entry)
            for index, trial in enumerate(trials):
                if same_attempt(trial, entry):
                    trials[index] = entry
                    break
            else:
                trials.append(entry)
            board["best"] = best_of(trials)
            board["updated"] = now_iso()
            atomic_write_json(self.path, board)

    def read(self) -> list[dict[str, Any]]:
        """Every trial, in the order first recorded (paths absolute, under this folder)."""
        return [self._absolute(t, t.get("run_dir")) for t in self.load()["trials"]]

    def best(self) -> dict[str, Any] | None:
        """The ``best`` entry (its checkpoint absolute), or None while no trial has a score."""
        board = self.load()
        best = board["best"]
        if not isinstance(best, dict):
            return None
        trial = next((t for t in board["trials"] if t["id"] == best.get("trial")
                      and (t.get("attempt") or 1) == (best.get("attempt") or 1)), {})
        return self._absolute(best, trial.get("run_dir"))

    def best_checkpoint(self) -> Path:
        """The best trial's checkpoint file in this folder; StoreError when there is none."""
        if not self.path.exists():
            raise StoreError(f"no scoreboard.json in {self.root}")
        best = self.best() or {}
        if not best.get("checkpoint"):
            raise StoreError(f"{self.path} has no best trial with a checkpoint yet")
        path = Path(best["checkpoint"])
        if not path.is_file():
            raise StoreError(f"{self.path}: the best checkpoint {path} (trial {best.get('trial')}) "
                             f"does not exist")
        return path

    def _relative(self, entry: dict[str, Any]) -> dict[str, Any]:
        root = self.root.resolve()
        for key in ("checkpoint", "run_dir"):
            value = entry.get(key)
            if isinstance(value, str) and Path(value).is_absolute() and Path(value).is_relative_to(root):
                entry[key] = Path(value).relative_to(root).as_posix() or "."
        return entry

    def _absolute(self, entry: dict[str, Any], run_dir: Any) -> dict[str, Any]:
        """``entry`` with checkpoint and run_dir under this folder (old absolute ones rebased)."""
        root, entry = self.root.resolve(), dict(entry)
        old_root = Path(run_dir).parent if isinstance(run_dir, str) and Path(run_dir).is_absolute() else None
        for key in ("checkpoint", "run_dir"):
            value = entry.get(key)
            if not isinstance(value, str) or not value:
                continue
            path = Path(value)
            if not path.is_absolute():
                entry[key] = str(root / path)
            elif old_root is not None and path.is_relative_to(old_root):
                entry[key] = str(root / path.relative_to(old_root))
        return entry

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
