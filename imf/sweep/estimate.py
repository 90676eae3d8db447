"""``imf sweep --dry-run --estimate``: each trial's training time from a short measured step.

The smallest and the largest trial of the plan each time a few training steps on this machine
(``imf trial ... --dry-run --time-steps N`` in a process of its own: the sweep never imports
torch); the others are placed on the line through those two in the planner's size measure
(n_layer x n_emb^2), so a 3 x 3 grid costs two measurements. Rollouts, data loading and the
final eval are not counted: these are training times, and the queues' makespan from them.

An epoch's steps are ``training.max_train_steps`` where it is set; otherwise they come from the
data set, which the sweep does not open (it imports no torch and no simulator), so they are
read from benchmarks/grid_cost.json when that file measured them for the same data settings (the
scripted demos the image presets use); for other data the estimate gives seconds a step only.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from imf.config import Config, load_config
from imf.errors import SweepError
from imf.scheduler import THREAD_VARS, scheduler_for
from imf.sweep.plan import Plan
from imf.sweep.state import SweepState, TrialState

STEPS_TIMED = 2
_MEASURED = re.compile(r"^measured step: ([0-9.]+) s", re.MULTILINE)
# Written by benchmarks/speed/grid_cost.py in a source checkout (absent from an installed wheel).
GRID_COST = Path(__file__).resolve().parents[2] / "benchmarks" / "grid_cost.json"
# What decides the steps of an epoch of the scripted demos: the episodes made (their recipe sets
# their lengths), their split, the windows' length and pads, and the batch (the loader keeps the
# last short batch).
EPOCH_KEYS = ("data.demo_episodes", "data.demo_seed", "data.expert_noise", "data.expert_finish", "data.expert_pace",
              "data.val_ratio", "data.split_seed", "data.max_train_episodes", "policy.horizon", "policy.n_obs_steps",
              "policy.n_action_steps", "training.batch_size")


def _size(trial: TrialState) -> float:
    return float(trial.params.get("n_layer") or 0) * float(trial.params.get("n_emb") or 0) ** 2 / 1e6


def _overrides(state: SweepState, trial: TrialState) -> list[str]:
    return [*state.overrides, *trial.overrides, f"training.seed={trial.seed}", f"training.num_epochs={trial.epochs}"]


def threads_of(state: SweepState, trial: TrialState) -> dict[str, str]:
    """The thread counts the slot of ``trial``'s queue gives its job (a local:cpu slot: its
    share of the cores), so the step is timed as the trial will run: torch's default of every
    core, on cores the sweep's other slots share, times a step up to twice as slow."""
    queue = next((q for q in state.queues if q.name == trial.queue), None)
    if queue is None:
        return {}
    env = scheduler_for(queue.spec, queue.options).slot_env()
    return {k: v for k, v in env.items() if k in THREAD_VARS}


def _measure(state: SweepState, trial: TrialState) -> float:
    argv = [sys.executable, "-m", "imf", "trial", trial.config or state.config, *_overrides(state, trial),
            "--dry-run", "--time-steps", str(STEPS_TIMED)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
                          env={**os.environ, **threads_of(state, trial)})
    found = _MEASURED.search(proc.stdout)
    if proc.returncode != 0 or not found:
        raise SweepError(f"--estimate: timing {trial.id} failed (exit {proc.returncode}): "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['no output']}")
    return float(found.group(1))


def epoch_settings(cfg: Config) -> dict[str, object]:
    """EPOCH_KEYS' values in ``cfg``."""
    out = {}
    for key in EPOCH_KEYS:
        section, name = key.split(".")
        out[key] = getattr(getattr(cfg, section), name)
    return out


def measured_epoch_steps(cfg: Config, path: Path | None = None) -> int | None:
    """Steps an epoch of ``cfg``'s scripted demos as benchmarks/grid_cost.json (or ``path``)
    counted them for the same settings, or None (another data set, other settings, no file)."""
    path = GRID_COST if path is None else path
    if cfg.data.path or not path.is_file():
        return None
    try:
        measured = json.loads(path.read_text()).get("steps_per_epoch", {}).values()
    except (OSError, ValueError, AttributeError):
        return None  # a damaged file only costs the estimate its hours
    wanted = epoch_settings(cfg)
    return next((int(m["steps"]) for m in measured
                 if isinstance(m, dict) and m.get("settings") == wanted and m.get("steps")), None)


def estimate_lines(state: SweepState, plan: Plan) -> list[str]:
    trials = sorted(state.trials, key=_size)
    ends = [trials[0]] if _size(trials[0]) == _size(trials[-1]) else [trials[0], trials[-1]]
    measured = {t.id: _measure(state, t) for t in ends}
    (x0, y0), (x1, y1) = [(_size(t), measured[t.id]) for t in (ends[0], ends[-1])]
    slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
    threads = threads_of(state, ends[-1]).get("OMP_NUM_THREADS", "torch's default")
    lines = [f"estimate (training only, this machine's CPU at {threads} thread(s), wall clock now, "
             f"{STEPS_TIMED} measured steps of " + " and ".join(ends_id for ends_id in measured)
             + "; the others on the line between; a GPU queue's steps are not timed here):"]
    hours: dict[str, float] = {}
    for trial in state.trials:
        cfg = load_config(trial.config or state.config, _overrides(state, trial))
        step = y0 + slope * (_size(trial) - x0)
        steps = cfg.training.max_train_steps or measured_epoch_steps(cfg)
        if not steps:
            lines.append(f"  {trial.id}: {step:.3f} s a step (an epoch's steps come from the data set)")
            continue
        counted = "" if cfg.training.max_train_steps else " (an epoch of its data: benchmarks/grid_cost.json)"
        hours[trial.id] = step * steps * trial.epochs / 3600
        lines.append(f"  {trial.id}: {step:.3f} s a step x {steps} steps{counted} x {trial.epochs} epochs = "
                     f"{hours[trial.id]:.2f} h")
    if len(hours) == len(state.trials):
        per_queue = {q: sum(hours[t] for t in ids) / plan.speeds[q] for q, ids in plan.order.items()}
        lines.append("  makespan on these queues: " + f"{max(per_queue.values()):.2f} h ("
                     + ", ".join(f"{q} {h:.2f} h" for q, h in per_queue.items()) + ")")
    return lines
