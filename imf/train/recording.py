"""A trial's identity and its records: the hashes in summary.json, the checks before the run
folder changes, an earlier attempt moved aside with its records following it, and the
records of a finished attempt in the project's stores (imf/store/records.py)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from imf import registry
from imf.config import Config
from imf.store import (IterationLogStore, RunLayout, cell_hash, check_identity, checkpoint_hash, numbered,
                       project_root, read_summary, record_from_summary, trial_hash)
from imf.errors import ConfigError

RECORDED_ENDS = ("completed", "stopped_early", "diverged", "failed")  # an interrupted run is resumed


@dataclass(frozen=True)
class Identity:
    config_hash: str  # config (learned settings), seed and warm start
    cell: str  # the same without the seed: the replicate group
    init_hash: str | None  # the warm-start checkpoint's bytes


def identity_of(cfg: Config, init_from: Path | None) -> Identity:
    """The trial's hashes; ``cfg`` with its plugins' options filled (config.yaml as written)."""
    config = cfg.to_dict()
    init_hash = checkpoint_hash(init_from) if init_from is not None else None
    return Identity(trial_hash(config, cfg.training.seed, init_hash), cell_hash(config, init_hash), init_hash)


def new_run_uid() -> str:
    """The token of one attempt: a rerun into the same folder gets a new one, a resume keeps it."""
    return uuid.uuid4().hex[:12]


def store_names(requested: list[str] | None, configured: list[str]) -> list[str]:
    """The stores to record in: ``--store`` (``none`` for none), else the config's."""
    names = requested if requested is not None else configured
    return [] if not names or names == ["none"] else list(names)


def store_root(run_dir: Path, given: Path | None) -> Path:
    """The project folder whose stores a trial in ``run_dir`` records into."""
    return project_root(given if given is not None else Path(run_dir).parent)


def check_before_run(root: Path, stores: list[str], trial_id: str, identity: Identity,
                     hypothesis: str | None = None) -> None:
    """Refuse an id the project already holds with another config, and a hypothesis its
    iteration log does not have (before the folder changes)."""
    if stores:
        check_identity(root, trial_id, identity.config_hash)
    if hypothesis is not None:
        log = IterationLogStore(root)
        known = [block["id"] for block in log.hypotheses()]
        if hypothesis not in known:
            raise ConfigError(f"--hypothesis {hypothesis}: no such block in {log.path} (ids: "
                              f"{', '.join(known) or 'none yet'}); add it with imf log hypothesis")


def record(root: Path, stores: list[str], summary: Any, run_dir: Path) -> None:
    """Record one attempt in every store, numbered once for all of them."""
    if not stores:
        return
    entry = numbered(root, record_from_summary(summary, run_dir))
    for name in stores:
        registry.get("imf.stores", name)(root).record(entry)


def archive_earlier(files: RunLayout, root: Path, stores: list[str], say: Callable[[str], None]) -> None:
    """Move an earlier attempt in the folder to attempts/N with every file that belongs to it
    (final_eval.json and holdout.json too), and point its records at where it went."""
    aside = files.archive_attempt()
    if aside is None:
        return
    say(f"an earlier attempt in {files.root} moved to {aside}")
    old = read_summary(aside)
    if old is None or old.status not in RECORDED_ENDS:
        return
    kept = old.stores if old.stores is not None else stores
    if kept:
        record(root, kept, old, aside)
