"""Where a trial is recorded, and the checks every recording makes first.

One scoreboard per project folder: a trial records into the folder above its run folder, a
sweep into its own folder, and either goes one level further up when that folder already holds
a scoreboard (a loop's rounds, a sweep or a trial placed inside a project), so trials, sweeps
and loop rounds of one project share one scoreboard and one iteration log.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from imf.errors import IdentityError
from imf.store.base import identity_clash, number_attempt
from imf.store.scoreboard import FILENAME, ScoreboardStore


def project_root(folder: Path) -> Path:
    """``folder``, or its parent when only the parent holds a scoreboard."""
    folder = Path(folder)
    if not (folder / FILENAME).exists() and (folder.parent / FILENAME).exists():
        return folder.parent
    return folder


def check_identity(root: Path, trial_id: str, config_hash: str | None) -> None:
    """Refuse, before anything runs, an id that ``root``'s scoreboard holds with another config."""
    if not config_hash:
        return
    clash = identity_clash(ScoreboardStore(root).read(), {"id": trial_id, "config_hash": config_hash})
    if clash is not None:
        raise IdentityError(
            f"trial id '{trial_id}' is already in {Path(root) / FILENAME} with another config "
            f"(hash {clash['config_hash']}, this one {config_hash}; run {clash.get('run_dir')}): "
            "an id names one config; drop --id for a unique default or choose another")


def numbered(root: Path, record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its attempt number among the attempts ``root``'s scoreboard holds (the
    same number for every store), after the identity check."""
    entries = ScoreboardStore(root).read()
    clash = identity_clash(entries, record)
    if clash is not None:
        raise IdentityError(f"trial id '{record['id']}' is already in {Path(root) / FILENAME} with "
                            f"another config (hash {clash['config_hash']}, this one "
                            f"{record.get('config_hash')}): not recorded")
    return {**record, "attempt": number_attempt(entries, record)}
