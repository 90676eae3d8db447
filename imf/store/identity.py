"""A trial's identity: what it learned from, as a hash, and the default id built on it.

Two runs are the same trial when their resolved configs agree on every setting that changes
what is learned, their seeds agree, and they warm-started from the same checkpoint (by its
bytes, not its path). Two runs are replicates (one cell) when only the seed differs. Settings
that only say where or how a run ran (device, workers, loggers, the sweep it belongs to) are
part of neither, so a run on a GPU and the same run on a CPU are one trial.

The default trial id is a readable prefix plus the first characters of the trial's hash, so
two trials that differ in a learning rate never share an id; the project's scoreboard refuses an
id that comes back with another hash (imf/store/records.py). ``readable_id`` makes every
readable id: ``imf trial``'s prefix, a sweep's trial ids and the ids ``imf suggest`` proposes.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# Settings that say where or how a run ran, not what it learned: left out of both hashes (and
# out of the report's cells). A key ending in "." names a whole section.
RUN_ONLY = ("training.seed", "training.device", "training.resume", "training.num_workers", "training.compile",
            "training.grad_accum", "training.init_partial",
            "eval.n_workers", "data.cache_dir", "name", "logging.", "sweep.", "multi_run.",
            "hydra.", "checkpoint.", "dataloader.num_workers", "val_dataloader.num_workers",
            "workdir", "eval.command", "eval.metric.")  # where a trainer's program ran, how it scores a
# checkpoint (imf/config/trainer.py)
ID_HASH_CHARS = 6  # in a default trial id: 16.7M values, plenty for one project's trials
HASH_CHARS = 12  # in summary.json and the stores
_CHUNK = 1 << 20
SIZED_ID = "<mask>-e<n_emb>-l<n_layer>-s<seed>"  # after the prefix, for imf's own policy


def run_only(key: str) -> bool:
    """Settings that say where or how a run ran, not what it learned (not part of a cell)."""
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in RUN_ONLY)


def flatten(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; YAML dates and the like become strings (JSON)."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = json.loads(json.dumps(value, default=str))
    return flat


def differences(config: dict[str, Any], reference: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(dotted key, the reference's value, this config's) for every setting that differs."""
    mine, theirs = flatten(config), flatten(reference)
    return [(k, theirs.get(k), mine.get(k)) for k in sorted(set(mine) | set(theirs))
            if mine.get(k) != theirs.get(k)]


def learned_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The flattened config without its run-only settings (the seed among them)."""
    return {k: v for k, v in flatten(config).items() if not run_only(k)}


def checkpoint_hash(path: Path) -> str:
    """The first HASH_CHARS hex digits of the sha256 of a checkpoint file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:HASH_CHARS]


def _digest(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def cell_hash(config: dict[str, Any], init_hash: str | None) -> str:
    """The replicate group: the learned settings and the warm start, without the seed."""
    return _digest({"settings": learned_settings(config), "init_from": init_hash})


def trial_hash(config: dict[str, Any], seed: int | None, init_hash: str | None) -> str:
    """The trial: its cell and its seed."""
    return _digest({"cell": cell_hash(config, init_hash), "seed": seed})


def default_trial_id(readable: str, config_hash: str) -> str:
    """``<readable>-<first 6 hex of the trial hash>``: unique per config, seed and warm start."""
    return f"{readable}-{config_hash[:ID_HASH_CHARS]}"


def id_word(value: Any) -> str:
    """A value as part of a trial id: anything but ASCII letters, digits, '.' and '-' is '_' (a
    trial id names its folder: ``imf trial --id`` takes [A-Za-z0-9._-]; 1e+4 is 1e_4)."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", str(value))


def override_pairs(words: Iterable[str]) -> list[tuple[str, str]]:
    """``key=value`` words as (key, value); a word without "=" is (word, "")."""
    return [(key, value) for key, _, value in (word.partition("=") for word in words)]


def readable_id(prefix: str, seed: Any, extras: Iterable[tuple[str, Any]] = (), *,
                params: Mapping[str, Any] | None = None, seed_last: bool = False) -> str:
    """``<prefix>-<mask>-e<n_emb>-l<n_layer>-s<seed>`` (the mask and sizes from ``params``, as
    ``imf.store.summary.params_of`` names them; ``<prefix>-s<seed>`` without ``params``), then
    ``-<key><value>`` per extra (the key's last dotted part); ``seed_last`` (a trainer program's
    trials): ``<prefix>-<key><value>...-s<seed>``."""
    head = [prefix] + ([id_word(params.get("mask")), f"e{params.get('n_emb')}", f"l{params.get('n_layer')}"]
                       if params is not None else [])
    words = [id_word(key.rsplit(".", 1)[-1]) + id_word(value) for key, value in extras]
    seed_word = [f"s{seed}"]
    return "-".join(head + (words + seed_word if seed_last else seed_word + words))
