"""What a folder has already tried: every trial's settings and seed, warm starts, logged ids.

A trial's settings are its flattened config.yaml without the settings that only say where or
how it ran (the report's cell identity). A trial known only from the scoreboard (its folder is
gone) is described by the overrides and params recorded there: it matches a proposal when every
setting it names has the proposal's value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imf.report import fill_added_settings, read_config
from imf.store import (CONFIG, PARAMS, SUMMARY, IterationLogStore, ScoreboardStore, flatten, read_json_object,
                       read_yaml_mapping, run_only)



@dataclass
class TriedRun:
    id: str
    settings: dict[str, Any]  # normalised values by dotted key
    complete: bool  # settings from the full config (True) or from recorded overrides (False)
    seed: int | None = None
    init_from: Path | None = None  # the checkpoint it warm-started from


@dataclass
class Tried:
    runs: list[TriedRun] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)  # every trial id seen (folders, stores, log)
    hypotheses: list[dict[str, Any]] = field(default_factory=list)
    added: dict[str, Any] = field(default_factory=dict)  # settings older run folders lack

    def has(self, settings: dict[str, Any], seed: int | None = None, init_from: Path | None = None) -> bool:
        """Was a run with these settings (and this seed, and a warm start from this checkpoint,
        when given) tried?"""
        wanted = normalise(settings)
        wanted = {**{k: v for k, v in self.added.items() if k not in wanted}, **wanted}
        target = init_from.resolve() if init_from is not None else None
        return any(_same(run, wanted) and (seed is None or run.seed == seed)
                   and (target is None or run.init_from == target) for run in self.runs)

    def exists(self, settings: dict[str, Any], seed: int, init_from: Path | None) -> TriedRun | None:
        """The run this exact trial already is (settings, seed and warm start, a cold start
        matching only a cold start), else None."""
        wanted = normalise(settings)
        wanted = {**{k: v for k, v in self.added.items() if k not in wanted}, **wanted}
        target = init_from.resolve() if init_from is not None else None
        return next((run for run in self.runs if run.complete and _same(run, wanted)
                     and run.seed == seed and run.init_from == target), None)

    def variants(self, settings: dict[str, Any], prefix: str) -> list[TriedRun]:
        """The runs with these settings but for those under ``prefix`` (any seed)."""
        wanted = normalise(settings)
        wanted = {**{k: v for k, v in self.added.items() if k not in wanted}, **wanted}
        return [run for run in self.runs if _same(run, _outside(wanted, prefix), prefix)]

    def warm_started_from(self, checkpoint: Path) -> list[str]:
        target = checkpoint.resolve()
        return [r.id for r in self.runs if r.init_from is not None and r.init_from == target]


def norm_value(value: Any) -> Any:
    """One spelling per value: override strings and YAML numbers compare equal (1e-4 == 0.0001)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, str):
        text = value.strip()
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        if lowered in ("null", "none", "~"):
            return None
        try:
            number = float(text)
        except ValueError:
            return text
        return norm_value(number) if math.isfinite(number) else text
    if isinstance(value, (list, tuple)):
        return [norm_value(v) for v in value]
    return value


def normalise(settings: dict[str, Any]) -> dict[str, Any]:
    return {key: norm_value(value) for key, value in settings.items()}


def _outside(settings: dict[str, Any], prefix: str | None) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if not prefix or not k.startswith(prefix)}


def _same(run: TriedRun, wanted: dict[str, Any], ignored: str | None = None) -> bool:
    """Does the run have the ``wanted`` settings (those under the prefix ``ignored`` aside)?"""
    settings = _outside(run.settings, ignored)
    if run.complete:
        return settings == wanted
    return all(wanted.get(key) == value for key, value in settings.items())


def settings_of(run_dir: Path) -> dict[str, Any] | None:
    """The run's settings from its config.yaml (None when it has none)."""
    config, _ = read_config(run_dir)
    return normalise(config) if config is not None else None


def full_config(run_dir: Path) -> dict[str, Any]:
    """Every setting of the run's config.yaml, run-only ones included (for building commands)."""
    return flatten(read_yaml_mapping(run_dir / CONFIG))


def _from_record(record: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    params = record.get("config") if isinstance(record.get("config"), dict) else {}
    for name, key in PARAMS.items():
        if name in params:
            settings[key] = params[name]
    for override in record.get("overrides") or []:
        key, sep, value = str(override).partition("=")
        if sep and not run_only(key.strip()):
            settings[key.strip()] = value
    return normalise(settings)


def _init_from(run_dir: Path) -> Path | None:
    """The checkpoint summary.json says the run warm-started from, resolved."""
    try:
        value = read_json_object(run_dir / SUMMARY).get("init_from")
    except ValueError:
        return None
    return Path(value).resolve() if isinstance(value, str) and value else None


def read_tried(folder: Path, trials: list[Any]) -> Tried:
    """``trials``: the report's trial rows of ``folder``; plus its scoreboard and iteration log."""
    tried = Tried()
    records = {r["id"]: r for r in ScoreboardStore(folder).read()}
    for row in trials:
        tried.ids.add(row.id)
        if row.is_ensemble:  # made of trained runs, so it has no settings of its own to match
            continue
        run_dir = Path(row.run_dir) if row.run_dir else None
        settings = settings_of(run_dir) if run_dir is not None else None
        if settings is None:
            if row.id not in records:
                continue  # planned, or a run without a config: nothing to compare with
            tried.runs.append(TriedRun(row.id, _from_record(records[row.id]), False, row.seed))
            continue
        tried.runs.append(TriedRun(row.id, settings, True, row.seed, _init_from(run_dir)))
    tried.added = fill_added_settings([r.settings for r in tried.runs if r.complete])
    log = IterationLogStore(folder)
    tried.ids.update(entry["id"] for entry in log.read())
    tried.ids.update(records)
    tried.hypotheses = log.hypotheses()
    return tried
