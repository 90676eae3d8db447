"""The record a finished trial hands to every store (their contract: ``imf.contracts.Store``).

A store is built as ``cls(root)`` where ``root`` is the project folder it writes into.
``record`` is an upsert by attempt (``same_attempt``: the trial id and the attempt's
``run_uid``): recording the same attempt twice replaces its entry; another attempt of the same
trial (the same config again) is a new entry with the next ``attempt`` number; the same id with
another config is refused (``identity_clash``).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from imf.clock import now_iso
from imf.contracts import Store  # noqa: F401  (the group's contract, imf/contracts.py, on the store's face)
from imf.errors import StoreError
from imf.store.layout import SUMMARY
from imf.store.summary import RunSummary

BEST_METRIC = "test_mean_score"
_ID_FORBIDDEN = "`\n\r\t"


def check_id(trial_id: Any, where: str) -> str:
    """``trial_id`` if it is a usable trial id, else a StoreError naming ``where``."""
    if not isinstance(trial_id, str) or not trial_id.strip():
        raise StoreError(f"{where}: trial id must be a non-empty string, got {trial_id!r}")
    if any(ch in trial_id for ch in _ID_FORBIDDEN):
        raise StoreError(f"{where}: trial id {trial_id!r} may not contain backticks, tabs "
                         "or line breaks")
    return trial_id


def score_value(value: Any, where: str) -> float | None:
    """A finite float score, or None for no score; anything else is a StoreError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StoreError(f"{where}: score must be a number or null, got {value!r}")
    value = float(value)
    return value if math.isfinite(value) else None


def normalize_record(record: Any) -> dict[str, Any]:
    """A full trial entry from ``record``: checked id and score, defaults filled in."""
    if not isinstance(record, dict):
        raise StoreError(f"a store record must be a dict, got {type(record).__name__}")
    trial_id = check_id(record.get("id"), "store record")
    status = str(record.get("status") or "unknown")
    entry = {
        "id": trial_id,
        "overrides": list(record.get("overrides") or []),
        "score": score_value(record.get("score"), f"record '{trial_id}'"),
        "epochs": record.get("epochs"),
        "elapsed": record.get("elapsed"),
        "warm_started": bool(record.get("warm_started", False)),
        "diverged": bool(record.get("diverged", status == "diverged")),
        "stopped_early": bool(record.get("stopped_early", status == "stopped_early")),
        "status": status,
        "note": str(record.get("note") or ""),
        "time": str(record.get("time") or now_iso()),
        "checkpoint": record.get("checkpoint"),
        "config": dict(record.get("config") or {}),
        "run_dir": record.get("run_dir"),
        "attempt": _attempt(record.get("attempt")),
    }
    extra = {key: value for key, value in record.items() if key not in entry}
    return {**entry, **extra}


def record_from_summary(summary: RunSummary | dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The store record for a trial, built from its summary (a RunSummary or summary.json's dict)."""
    run_dir = Path(run_dir).resolve()
    where = str(run_dir / SUMMARY)
    if isinstance(summary, dict):
        score_value(summary.get("best_score"), where)  # a wrong-typed score is an error, never "no score"
        summary = RunSummary.from_dict(summary)
    elif not isinstance(summary, RunSummary):
        raise StoreError(f"{where}: expected a JSON object, got {type(summary).__name__}")
    best = summary.checkpoints.best
    return {
        "id": check_id(summary.id, where),
        "overrides": list(summary.overrides),
        "score": summary.best_score,
        "epochs": summary.epochs_done,
        "elapsed": summary.elapsed_s,
        "warm_started": summary.warm_started,
        "diverged": summary.status == "diverged",
        "stopped_early": summary.status == "stopped_early",
        "status": summary.status or "unknown",
        "note": summary.note,
        "time": summary.finished or now_iso(),
        "checkpoint": str((run_dir / best).resolve()) if best else None,
        "config": dict(summary.params),
        "run_dir": str(run_dir),
        "seed": summary.seed,
        "init_from": summary.init_from,
        "init_hash": summary.init_hash,
        "config_hash": summary.config_hash,
        "cell": summary.cell,
        "run_uid": summary.run_uid,
        "hypothesis": summary.hypothesis,
        "attempt": None,  # numbered by the scoreboard, among the records of this id
    }


def _attempt(value: Any) -> int | None:
    """An attempt number (>= 1), or None when the store is to number it."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def same_attempt(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Do two records describe one attempt of one trial? The attempt's run_uid says so where
    either has one (a resume keeps it, a rerun gets a new one); records written before run_uid
    existed are one attempt per id and number."""
    if a["id"] != b["id"]:
        return False
    if a.get("run_uid") or b.get("run_uid"):
        return a.get("run_uid") == b.get("run_uid")
    return (a.get("attempt") or 1) == (b.get("attempt") or 1)


def identity_clash(entries: list[dict[str, Any]], record: dict[str, Any]) -> dict[str, Any] | None:
    """An entry with ``record``'s id but another config hash (both known), else None."""
    mine = record.get("config_hash")
    for entry in entries:
        theirs = entry.get("config_hash")
        if entry["id"] == record["id"] and mine and theirs and mine != theirs:
            return entry
    return None


def number_attempt(entries: list[dict[str, Any]], record: dict[str, Any]) -> int:
    """``record``'s attempt number: the one already recorded for this attempt, else one more
    than the highest of its id (1 for a new id)."""
    same = next((e for e in entries if same_attempt(e, record)), None)
    if same is not None and same.get("attempt"):
        return int(same["attempt"])
    return 1 + max((int(e.get("attempt") or 1) for e in entries if e["id"] == record["id"]), default=0)


ENSEMBLE = "ensemble"  # an entry's ``kind`` for ``imf ensemble``'s result: not a trained trial


def is_ensemble(entry: dict[str, Any]) -> bool:
    return entry.get("kind") == ENSEMBLE


def best_of(trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The best scored trial as a scoreboard ``best`` entry; ties keep the earlier trial.
    Ensemble entries are never the best trial (they are no trained trial)."""
    best: dict[str, Any] | None = None
    for trial in trials:
        score = trial.get("score")
        if score is None or is_ensemble(trial):
            continue
        if best is None or score > best["score"]:
            best = trial
    if best is None:
        return None
    return {"metric": BEST_METRIC, "value": best["score"], "trial": best["id"],
            "attempt": best.get("attempt") or 1, "checkpoint": best.get("checkpoint"), "config": best.get("config") or {},
            "time": best.get("time")}
