"""A trial's attempts as the sweep recorded them (sweep.json's ``attempts``, ``history`` and
``reruns``), for the report: "4 attempts (1 failed, 2 failed, rerun, 3 failed, 4 completed)"."""
from __future__ import annotations

from typing import Any


def attempts_text(state: dict[str, Any]) -> tuple[int, str]:
    """(attempts launched, each ended attempt's number and outcome in order, with each
    ``imf sweep --rerun`` where it came); (0, "") for a trial the sweep does not know."""
    attempts = state.get("attempts")
    if not isinstance(attempts, int) or isinstance(attempts, bool):
        return 0, ""
    history = [h for h in state.get("history") or [] if isinstance(h, dict)]
    marks = [r.get("history") for r in state.get("reruns") or [] if isinstance(r, dict)]
    parts = []
    for i, entry in enumerate(history):
        parts += ["rerun"] * marks.count(i)
        parts.append(f"{entry.get('attempt', '?')} {entry.get('outcome', '?')}")
    parts += ["rerun"] * marks.count(len(history))
    return attempts, ", ".join(parts)


def attempt_lines(rows: list[Any]) -> list[str]:
    """One line per trial with more than one attempt (TrialRow's ``attempts``, ``attempt_log``)."""
    return [f"{r.id}: {r.attempts} attempts ({r.attempt_log})" for r in rows
            if r.attempts > 1 or "rerun" in r.attempt_log]
