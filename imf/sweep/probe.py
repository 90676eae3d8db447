"""Which of a sweep's queues can run its trials, checked as a start checks them.

A queue passes when its spec's ``check`` does (the host answers and imports imf), its machine
loads the plugins the trials load (``Scheduler.check_plugins``: masks, objectives, curricula and
trackers, where the trials run) and, for a GPU slot, the probe finds its GPU. ``--min-queues N``
(default: every queue named) is how many must pass for a new sweep to start; ``refusal`` is the
one line that says which did not and why. The dry run and the start use the same checks.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

from imf.config import load_config
from imf.errors import ImfError, QueueError
from imf.scheduler import Scheduler
from imf.sweep.gpus import GpuVerdict, probe_queues
from imf.sweep.state import SweepState

# (group, config key) of the plugins a trial loads; the stores and schedulers are the controller's
TRIAL_PLUGINS = (("imf.masks", "policy.mask"), ("imf.objectives", "objective.name"),
                 ("imf.curricula", "data.curriculum"), ("imf.trackers", "logging.trackers"))
_PARAMS = {"policy.mask": "mask", "objective.name": "objective"}  # kept in each trial's params
_passed: "weakref.WeakKeyDictionary[Scheduler, frozenset[str]]" = weakref.WeakKeyDictionary()


def _given(overrides: list[str]) -> dict[str, str]:
    """``key=value`` overrides as a mapping (the last one of a key wins)."""
    return dict(item.split("=", 1) for item in overrides if "=" in item)


def _base_values(config: str, overrides: list[str]) -> dict[str, list[str]]:
    """The plugin keys' values in ``config`` with the sweep's overrides ({} when it cannot be read)."""
    try:
        cfg = load_config(config, overrides).to_dict()
    except (ImfError, OSError):
        return {}
    values: dict[str, list[str]] = {}
    for _, key in TRIAL_PLUGINS:
        value: Any = cfg
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        values[key] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return values


def plugin_names(state: SweepState) -> list[str]:
    """``group:name`` of every plugin the sweep's trials load, in group order."""
    bases: dict[str, dict[str, list[str]]] = {}
    wanted: dict[str, set[str]] = {group: set() for group, _ in TRIAL_PLUGINS}
    for trial in state.trials:
        config = trial.config or state.config
        if config not in bases:
            bases[config] = _base_values(config, state.overrides)
        own = _given([*state.overrides, *trial.overrides])
        for group, key in TRIAL_PLUGINS:
            if key in own:
                names = own[key].split(",")
            elif key in _PARAMS and trial.params.get(_PARAMS[key]) is not None:
                names = [str(trial.params[_PARAMS[key]])]
            else:
                names = bases[config].get(key, [])
            for name in (n.strip() for n in names):
                if name not in ("", "None") and not (group == "imf.trackers" and name == "none"):
                    wanted[group].add(name)
    return [f"{group}:{name}" for group, names in wanted.items() for name in sorted(names)]


def _bare(why: str) -> str:
    """A queue error without its leading ``queue 'SPEC': `` (the line names the queue already)."""
    return why.split(": ", 1)[1] if why.startswith("queue '") and ": " in why else why


def queue_problems(state: SweepState, scheduler: Callable[[str], Scheduler],
                   reach: bool = True) -> dict[str, str]:
    """Every queue whose spec's check (``reach``) or plugin check fails -> why; nothing is
    changed. Slots of one machine and python (one ``probe_key``) load the plugins once, and a
    scheduler that loaded them already is not asked again."""
    wanted = plugin_names(state)
    by_spec: dict[str, str] = {}
    by_machine: dict[Any, str] = {}
    for queue in state.queues:
        if queue.spec in by_spec:
            continue
        sch = scheduler(queue.name)
        try:
            if reach:
                sch.check()
        except QueueError as exc:
            by_spec[queue.spec] = _bare(str(exc))
            continue
        key = sch.probe_key() or ("spec", queue.spec)
        if key not in by_machine:
            by_machine[key] = _plugins_problem(sch, wanted)
        by_spec[queue.spec] = by_machine[key]
    return {q.name: by_spec[q.spec] for q in state.queues if by_spec.get(q.spec)}


def _plugins_problem(sch: Scheduler, wanted: list[str]) -> str:
    """Why ``sch``'s machine cannot load ``wanted`` ("" when it can; a pass is remembered)."""
    if _passed.get(sch) == frozenset(wanted):
        return ""
    try:
        sch.check_plugins(wanted)
    except QueueError as exc:
        return _bare(str(exc))
    _passed[sch] = frozenset(wanted)
    return ""


def start_problems(state: SweepState, scheduler: Callable[[str], Scheduler]) -> tuple[dict[str, str], list[GpuVerdict]]:
    """``queue_problems`` and the GPU probes of the queues that passed them: every queue a start
    would count as down -> why, and the probes' verdicts."""
    down = queue_problems(state, scheduler)
    verdicts = probe_queues([q for q in state.queues if q.name not in down], scheduler)
    down.update({v.queue: v.text for v in verdicts if not v.found})
    return down, verdicts


def needed(state: SweepState) -> int:
    """How many queues must pass for the sweep to start (--min-queues; default: all)."""
    return state.min_queues or len(state.queues)


def refusal(state: SweepState, down: dict[str, str]) -> str | None:
    """The one line refusing a start with too few queues passing (``down``: queue -> why), or None."""
    passing = len(state.queues) - len(down)
    if passing >= needed(state):
        return None
    grouped: dict[str, list[str]] = {}
    for name, why in down.items():
        grouped.setdefault(_bare(why), []).append(name)
    why = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in grouped.items())
    if not passing:
        return f"no queue passed its check: {why}"
    return (f"{passing} of {len(state.queues)} queues passed their check, {needed(state)} needed "
            f"(--min-queues): {why}; fix them, or start with fewer (--min-queues {passing})")


def check_lines(state: SweepState, down: dict[str, str]) -> list[str]:
    """The dry run's account of the queue checks: each queue, ok or down and why."""
    passing = len(state.queues) - len(down)
    head = f"queue checks ({passing} of {len(state.queues)} pass, {needed(state)} needed: --min-queues):"
    return [head, *(f"  {q.name}: down: {_bare(down[q.name])}" if q.name in down else f"  {q.name}: ok"
                    for q in state.queues)]
