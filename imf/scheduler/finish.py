"""What happens when trials end: summaries, records in the stores, the report, the notification.

The controller records every finished trial itself (local and remote alike, ``imf trial`` runs
with ``--store none``). A trial that failed or stalled gets its summary.json completed (or
written) here, so stores and the report see its final status.
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

from imf import registry
from imf.errors import ImfError
from imf.scheduler.state import SweepState, TrialState, now_iso
from imf.store.files import atomic_write_json
from imf.store.runs import SUMMARY, read_json_object


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    try:
        return read_json_object(run_dir / SUMMARY)
    except ValueError:
        return None


def _synthesized(trial: TrialState, state: SweepState) -> dict[str, Any]:
    """A summary in the documented format for a trial that left none."""
    params = {k: trial.params.get(k) for k in ("mask", "n_emb", "n_layer", "n_head", "objective")}
    return {"id": trial.id, "status": trial.state, "epochs_done": trial.epoch,
            "num_epochs": trial.epochs, "global_step": 0, "best_score": trial.best_score,
            "best_epoch": None, "last_score": trial.last_score, "best_success_rate": None,
            "elapsed_s": trial.elapsed_s or 0.0, "warm_started": False, "init_from": None,
            "overrides": state.overrides + trial.overrides, "note": trial.reason, "seed": trial.seed,
            "params": params, "checkpoints": {"latest": None, "best": None, "topk": []},
            "started": trial.started, "finished": trial.finished, "code_version": ""}


def final_summary(trial: TrialState, state: SweepState, run_dir: Path) -> dict[str, Any]:
    """The trial's summary with the sweep's verdict; written back for failed/stalled trials."""
    summary = read_summary(run_dir)
    if trial.state in ("failed", "stalled"):
        summary = {**_synthesized(trial, state), **(summary or {})}
        summary.update(status=trial.state, finished=trial.finished or now_iso(),
                       note=summary.get("note") or trial.reason)
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(run_dir / SUMMARY, summary)
    return summary or _synthesized(trial, state)


def record_trial(trial: TrialState, state: SweepState, sweep_dir: Path) -> list[str]:
    """Record ``trial`` in every store of the sweep (upserts); return the problems met."""
    from imf.store import record_from_summary  # stores are only needed once a trial ends

    run_dir = (sweep_dir / trial.id).resolve()
    record = record_from_summary(final_summary(trial, state, run_dir), run_dir)
    problems = []
    for name in state.stores:
        try:
            registry.get("imf.stores", name)(sweep_dir.resolve()).record(record)
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
