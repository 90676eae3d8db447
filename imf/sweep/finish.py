"""What happens when trials end: summaries, records in the stores, the report, the notification.

The controller records every finished trial itself (local and remote alike, ``imf trial`` runs
with ``--store none``). A trial that failed or stalled gets its summary.json completed (or
written) here, so stores and the report see its final status.
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from imf import registry
from imf.clock import now_iso
from imf.errors import ImfError
from imf.sweep.state import SweepState, TrialState
from imf.store import PARAM_KEYS, RunSummary, read_summary


def _synthesized(trial: TrialState, state: SweepState) -> RunSummary:
    """The summary of a trial that left none, from what the sweep knows of it."""
    return RunSummary(id=trial.id, status=trial.state, epochs_done=trial.epoch, num_epochs=trial.epochs,
                      best_score=trial.best_score, last_score=trial.last_score,
                      elapsed_s=trial.elapsed_s or 0.0, overrides=state.overrides + trial.overrides,
                      note=trial.reason, seed=trial.seed,
                      params={k: trial.params.get(k) for k in PARAM_KEYS},
                      started=trial.started, finished=trial.finished)


def final_summary(trial: TrialState, state: SweepState, run_dir: Path) -> RunSummary:
    """The trial's summary with the sweep's verdict; written back for failed/stalled trials and
    for those successive halving stopped (the trial itself saw a SIGTERM: "interrupted")."""
    summary = read_summary(run_dir) or _synthesized(trial, state)
    halted = state.halving.stop_of(trial.id) if state.halving and trial.state == "stopped_early" else None
    if trial.state in ("failed", "stalled") or halted:
        summary.status, summary.finished = trial.state, trial.finished or now_iso()
        summary.note = _with(summary.note, halted.reason) if halted else summary.note or trial.reason
        run_dir.mkdir(parents=True, exist_ok=True)
        summary.write(run_dir)
    return summary


def _with(note: str, reason: str) -> str:
    return note if reason in note else f"{note}; {reason}" if note else reason


def record_trial(trial: TrialState, state: SweepState, sweep_dir: Path) -> list[str]:
    """Record ``trial`` in every store of the sweep's project (the sweep folder, or the project
    folder above it: imf/store/records.py), one attempt numbered once; return the problems met."""
    from imf.store import numbered, project_root, record_from_summary  # stores are only needed once a trial ends

    run_dir = (sweep_dir / trial.id).resolve()
    root = project_root(sweep_dir.resolve())
    record = record_from_summary(final_summary(trial, state, run_dir), run_dir)
    record["hypothesis"] = record.get("hypothesis") or state.hypothesis
    record = numbered(root, record)
    problems = []
    for name in state.stores:
        try:
            registry.get("imf.stores", name)(root).record(record)
        except (ImfError, OSError) as exc:
            problems.append(f"store {name}: {exc}")
    return problems


def write_report(sweep_dir: Path) -> tuple[Path, str]:
    """Write report.md/.json/.csv and heatmap.png; return the markdown path and the text."""
    from imf.report import render_text, write_report as _write

    report = _write(sweep_dir)
    return sweep_dir / "report.md", render_text(report)


def notify(command: str, report_path: Path, timeout: float = 120.0) -> str:
    """Run ``command`` with the report's path (as ``{report}`` or appended); return a log line."""
    if "{report}" in command:
        argv = [a.replace("{report}", str(report_path)) for a in shlex.split(command)]
    else:
        argv = [*shlex.split(command), str(report_path)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"notify failed: {exc}"
    if proc.returncode != 0:
        return f"notify exited {proc.returncode}: {proc.stderr.strip()[-200:]}"
    return f"notified: {shlex.join(argv)}"
