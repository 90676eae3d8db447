"""Checks of a sweep.json read from disk: every field of the right type, every name known.

A hand-edited or damaged state file must give one clear error (naming the field) before any
part of imf acts on it, never a traceback, and never a half-started resume.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from imf import registry
from imf.errors import ImfError, SweepError
from imf.scheduler import GROUP, HANDLE_FIELDS, scheme_of
from imf.sweep.state import (QUEUE_STATES, STATES, SWEEP_STATUSES, Decision, HalvingState,
                             QueueState, RungScore, SweepState, TrialState)
from imf.typed import Kind, describe, field_kinds, fits



def check_sweep_dict(data: Any) -> None:
    """Raise SweepError (naming the field) unless ``data`` can be read as a SweepState."""
    if not isinstance(data, dict):
        raise SweepError(f"must be a JSON object, got {type(data).__name__}")
    _check_fields(data, SweepState, "")
    for i, queue in enumerate(data["queues"]):
        _check_item(queue, QueueState, f"queues[{i}]")
    for i, trial in enumerate(data["trials"]):
        _check_item(trial, TrialState, f"trials[{i}]")
    _check_values(data)


def _check_item(item: Any, cls: type, where: str) -> None:
    if not isinstance(item, dict):
        raise SweepError(f"{where} must be an object, got {type(item).__name__}")
    _check_fields(item, cls, where + " ")


def _check_fields(data: dict[str, Any], cls: type, where: str) -> None:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise SweepError(f"{where}unknown key '{unknown[0]}'")
    kinds = field_kinds(cls)
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SweepError(f"{where}'{name}' is missing")
            continue
        if not fits(data[name], kinds[name]):
            raise SweepError(f"{where}'{name}' must be {describe(kinds[name])}, got {data[name]!r:.60}")


def _check_values(data: dict[str, Any]) -> None:
    if data.get("status", "planned") not in SWEEP_STATUSES:
        raise SweepError(f"status '{data['status']}' is not one of {', '.join(SWEEP_STATUSES)}")
    for key in ("poll", "stall_timeout"):
        if key in data and not 0 < data[key] < math.inf:
            raise SweepError(f"'{key}' must be a finite number > 0, got {data[key]}")
    if data.get("retries", 0) < 0:
        raise SweepError(f"'retries' must be >= 0, got {data['retries']}")
    if data.get("halving") is not None:
        _check_halving(data["halving"])
    installed = registry.names(GROUP)
    for i, queue in enumerate(data["queues"]):
        if queue.get("state", "live") not in QUEUE_STATES:
            raise SweepError(f"queues[{i}] state '{queue['state']}' is not live, down or blocked")
        scheme = scheme_of(queue["spec"])
        if scheme not in installed:
            raise SweepError(f"queues[{i}]: unknown scheduler '{scheme}' in {GROUP}; installed: "
                             f"{', '.join(installed) or 'none'}")
    names = {q["name"] for q in data["queues"]}
    for i, trial in enumerate(data["trials"]):
        if trial.get("state", "pending") not in STATES:
            raise SweepError(f"trials[{i}] state '{trial['state']}' is not one of "
                             f"{', '.join(STATES)}")
        _check_handle(trial.get("handle"), f"trials[{i}] handle")
        _check_reruns(trial, f"trials[{i}] reruns")
        for j, orphan in enumerate(trial.get("orphans", [])):
            if not (isinstance(orphan.get("queue"), str) and isinstance(orphan.get("handle"), dict)):
                raise SweepError(f"trials[{i}] orphans: each needs a 'queue' and a 'handle' object")
            _check_handle(orphan["handle"], f"trials[{i}] orphans[{j}] handle")
        lost = [trial["queue"]] + [o["queue"] for o in trial.get("orphans", [])]
        if any(q not in names for q in lost):
            raise SweepError(f"trial {trial['id']} is on queue "
                             f"'{next(q for q in lost if q not in names)}', which the sweep does not have")


def _check_reruns(trial: dict[str, Any], where: str) -> None:
    """Each rerun entry says where its attempts begin in the trial's history."""
    for j, entry in enumerate(trial.get("reruns", [])):
        at = entry.get("history")
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= len(trial.get("history", [])):
            raise SweepError(f"{where}[{j}] 'history' must be an int from 0 to the length of the "
                             f"trial's history, got {at!r:.60}")


def _check_handle(handle: dict[str, Any] | None, where: str) -> None:
    """The handle keys the engine reads, and those its scheduler declares."""
    for key, kind in {**HANDLE_FIELDS, **_declared_handle_keys((handle or {}).get("queue"))}.items():
        value = (handle or {}).get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise SweepError(f"{where} '{key}' must be {describe(Kind(kind, optional=True))}, got {value!r:.60}")


def _declared_handle_keys(spec: Any) -> dict[str, type]:
    try:
        return dict(getattr(registry.get(GROUP, scheme_of(spec)), "handle_keys", {}) or {})
    except (ImfError, TypeError):
        return {}  # no queue or an unknown scheme: validated where the queue is


def _check_halving(data: Any) -> None:
    """sweep.json's ``halving``: every field of the right type, then the rule's values."""
    if not isinstance(data, dict):
        raise SweepError(f"'halving' must be an object, got {data!r:.60}")
    _check_fields(data, HalvingState, "halving ")
    eta, rungs = data["eta"], data["rungs"]
    if eta < 2:
        raise SweepError(f"halving 'eta' must be an int >= 2, got {eta!r:.60}")
    if not (rungs and all(r >= 1 for r in rungs) and rungs == sorted(set(rungs))):
        raise SweepError(f"halving 'rungs' must be strictly increasing epochs >= 1, got {rungs!r:.60}")
    for i, score in enumerate(data.get("scores", [])):
        _check_item(score, RungScore, f"halving scores[{i}]")
    for i, decision in enumerate(data.get("decisions", [])):
        _check_item(decision, Decision, f"halving decisions[{i}]")
        if decision["outcome"] not in ("kept", "stopped"):
            raise SweepError(f"halving decisions[{i}] outcome must be kept or stopped, "
                             f"got {decision['outcome']!r:.60}")
