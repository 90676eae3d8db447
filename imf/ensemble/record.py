"""What an ensemble leaves: ``<id>.pt``, ``<id>.json`` beside it, and a scoreboard entry.

The scoreboard entry has ``kind: "ensemble"`` and lists its members; the scoreboard never makes
it its best trial, and the report ranks it beside the trials without counting it as one (no
cell, trend or seed).

    <id>.json: {"id", "mode", "top", "source", "checkpoint", "members": [{"trial", "checkpoint",
                "score", "epoch"}], "selection": {episodes, seed_start, mean, se, success_rate,
                success_se, per_seed, per_seed_success, noise_seed}, "latency": {median_ms,
                p90_ms, repeats, threads, device}, "code_version", "time"}
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_json
from imf.clock import now_iso
from imf.ensemble.members import Selection
from imf.ensemble.score import SelectionScore, Latency, as_dict
from imf.store import ENSEMBLE as KIND, ScoreboardStore
from imf.version import code_version


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it (the scoreboard's own convention)."""
    path = Path(path).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def result_of(selection: Selection, mode: str, out: Path, scored: SelectionScore,
              latency: Latency) -> dict[str, Any]:
    root = selection.root
    return {"id": selection.id, "mode": mode, "top": len(selection.members),
            "source": str(selection.source.resolve()), "checkpoint": str(Path(out).resolve()),
            "members": [{"trial": m.trial, "checkpoint": _shown(m.checkpoint, root),
                         "score": m.score, "epoch": m.epoch} for m in selection.members],
            "selection": as_dict(scored), "latency": as_dict(latency),
            "code_version": code_version(), "time": now_iso()}


def write_result(out: Path, result: dict[str, Any]) -> Path:
    path = Path(out).with_suffix(".json")
    atomic_write_json(path, result)
    return path


def scoreboard_record(result: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The scoreboard entry: its score is the selection-seed mean (one evaluation, not a max)."""
    scored, members = result["selection"], result["members"]
    return {"id": result["id"], "kind": KIND, "mode": result["mode"], "top": result["top"],
            "members": members, "score": scored["mean"], "se": scored["se"],
            "success_rate": scored["success_rate"], "success_se": scored["success_se"],
            "episodes": scored["episodes"], "seed_start": scored["seed_start"],
            "latency_ms": result["latency"]["median_ms"], "status": KIND,
            "note": f"{result['mode']} ensemble of the top {result['top']}: "
                    + ", ".join(f"{m['trial']}@{m['epoch']}" for m in members),
            "checkpoint": result["checkpoint"], "run_dir": None, "config": params,
            "source": result["source"], "time": result["time"]}


def record(selection: Selection, result: dict[str, Any], params: dict[str, Any]) -> None:
    ScoreboardStore(selection.root).record(scoreboard_record(result, params))


def check_scoreboard(selection: Selection) -> None:
    """Fail before the work when the scoreboard cannot take the entry (corrupt, unreadable)."""
    ScoreboardStore(selection.root).load()
