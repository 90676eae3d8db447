"""summary.json as one typed record: written by the trial (and by the sweep for a trial that
left none), read by the stores, the sweep and the report.

``to_dict`` writes ``"version": SUMMARY_VERSION``; ``from_dict`` also reads files written
before the version existed (the same fields) and tolerates what it does not know: a value of
the wrong type reads as the field's default, unknown keys are kept in ``extra`` and written
back, so a rewrite never drops them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_json
from imf.store.layout import SUMMARY
from imf.store.runlock import live_holder
from imf.store.runs import read_json_object
from imf.typed import Kind, field_kinds, fits

SUMMARY_VERSION = 1
# a trial's params (summary.json, sweep.json, the stores' "config"): name -> its config key
PARAMS = {"mask": "policy.mask", "n_emb": "policy.n_emb", "n_layer": "policy.n_layer",
          "n_head": "policy.n_head", "objective": "objective.name"}
PARAM_KEYS = tuple(PARAMS)
# fields added after version 1 was first written: left out while unset
UNSET_OMITTED = ("data", "config_hash", "cell", "init_hash", "run_uid", "hypothesis", "stores")


def params_of(config: Any) -> dict[str, Any]:
    """The params of a trial with ``config``: a Config, or its nested dict (None where unset)."""
    out = {}
    for name, key in PARAMS.items():
        value = config
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
        out[name] = value
    return out


@dataclass
class Checkpoints:
    """Paths relative to the run folder."""

    latest: str | None = None
    best: str | None = None
    topk: list[str] = field(default_factory=list)


@dataclass
class RunSummary:
    id: str = ""
    # running, completed, stopped_early, diverged, failed, stalled, interrupted (a stop signal,
    # or a "running" summary whose process is gone: see observed_status)
    status: str = "running"
    reason: str = ""  # why it diverged or failed
    epochs_done: int = 0
    num_epochs: int = 0
    global_step: int = 0
    best_score: float | None = None
    best_epoch: int | None = None  # 0-based, as logs.json.txt's epoch
    last_score: float | None = None
    best_success_rate: float | None = None
    elapsed_s: float = 0.0
    warm_started: bool = False
    init_from: str | None = None
    overrides: list[str] = field(default_factory=list)
    note: str = ""
    seed: int | None = None
    params: dict[str, Any] = field(default_factory=dict)  # mask, n_emb, n_layer, n_head, objective
    checkpoints: Checkpoints = field(default_factory=Checkpoints)
    started: str | None = None
    finished: str | None = None
    code_version: str = ""
    # episodes, val_episodes (the validation split), train_episodes (what it trained on)
    data: dict[str, Any] | None = None
    # identity (imf/store/identity.py): the trial's hash (config, seed, warm start), its cell's
    # (the same without the seed), the warm-start checkpoint's, and this attempt's own token
    config_hash: str | None = None
    cell: str | None = None
    init_hash: str | None = None
    run_uid: str | None = None
    hypothesis: str | None = None  # the iteration log's block (H3) this trial tests
    stores: list[str] | None = None  # where it is recorded ([] for --store none); a resume keeps them
    extra: dict[str, Any] = field(default_factory=dict)  # keys this imf does not know

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": SUMMARY_VERSION}
        for f in fields(self):
            if f.name != "extra":
                out[f.name] = getattr(self, f.name)
        for name in UNSET_OMITTED:  # a summary from before they were recorded is written back as it was
            if out[name] is None:
                del out[name]
        out["overrides"] = list(self.overrides)
        out["params"] = dict(self.params)
        c = self.checkpoints
        out["checkpoints"] = {"latest": c.latest, "best": c.best, "topk": list(c.topk)}
        return {**out, **{k: v for k, v in self.extra.items() if k not in out}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunSummary":
        known = field_kinds(cls)
        kwargs: dict[str, Any] = {}
        for name, kind in known.items():
            if name in data and name not in ("extra", "checkpoints"):
                value = _typed(data[name], kind)
                if value is not _WRONG:
                    kwargs[name] = value
        ckpts = data.get("checkpoints") if isinstance(data.get("checkpoints"), dict) else {}
        kinds = field_kinds(Checkpoints)
        kwargs["checkpoints"] = Checkpoints(
            latest=_typed(ckpts.get("latest"), kinds["latest"], None),
            best=_typed(ckpts.get("best"), kinds["best"], None),
            topk=_typed(ckpts.get("topk", []), kinds["topk"], []))
        extra = {k: v for k, v in data.items() if k not in known and k != "version"}
        return cls(**kwargs, extra=extra)

    def write(self, run_dir: Path) -> None:
        atomic_write_json(Path(run_dir) / SUMMARY, self.to_dict())


def read_summary(run_dir: Path) -> RunSummary | None:
    """The run's summary.json, or None when it is missing or not a JSON object; a "running"
    summary whose process is gone reads as "interrupted" (``observed_status``)."""
    try:
        summary = RunSummary.from_dict(read_json_object(Path(run_dir) / SUMMARY))
    except ValueError:
        return None
    seen = observed_status(summary.status, run_dir)
    if seen != summary.status:
        summary.status, summary.reason = seen, GONE
    return summary


GONE = "the process that ran it is gone (killed, or its disk filled up)"


def observed_status(status: str, run_dir: Path) -> str:
    """``status`` as a reader should show it: "running" only while a live process holds the
    run folder's lock (imf/store/runlock.py), "interrupted" once it is gone."""
    if status == "running" and live_holder(Path(run_dir)) is None:
        return "interrupted"
    return status


_WRONG = object()


def _typed(value: Any, kind: Kind, default: Any = _WRONG) -> Any:
    """``value`` as ``kind`` (ints read as floats, a non-finite float as None), else ``default``."""
    if value is None or not fits(value, kind):
        return None if value is None and kind.optional else default
    if kind.base is float:
        return float(value) if math.isfinite(value) else (None if kind.optional else default)
    return list(value) if kind.base is list else dict(value) if kind.base is dict else value
