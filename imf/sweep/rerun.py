"""``imf sweep --rerun failed[,diverged,stalled] DIR``: run again just the trials of a sweep that
ended in those states, inside the same sweep, as new attempts of the same trials.

The trials are marked under the sweep's controller lock, by the controller that then runs them
(``Engine.run``'s ``prepare``), so a rerun never runs beside another controller of the sweep,
and two reruns asked at once mark a trial once: the second finds sweep.json changed while it
waited for the lock and is refused. Each marked trial goes back to pending with an entry in its
``reruns`` (what it was, after which attempt), its retries counted anew; its next launch is an
attempt like any other (a new token, the claim, the earlier attempt's files moved to
``attempts/N``), recorded as the trial's next attempt. A controller killed after the marking
leaves them pending: ``--resume`` (or the same ``--rerun`` again) runs them, once.
"""
from __future__ import annotations

import os
from collections import Counter

from imf import drill
from imf.clock import now_iso
from imf.errors import SweepError
from imf.sweep.engine import Engine
from imf.sweep.state import FINAL, TrialState

RERUNNABLE = ("failed", "diverged", "stalled")


def parse_rerun(value: str) -> tuple[str, ...]:
    """``failed,stalled`` -> ("failed", "stalled"); SweepError for anything else."""
    names = [v.strip() for v in value.split(",")]
    bad = [n for n in names if n not in RERUNNABLE]
    if bad or not value.strip():
        raise SweepError(f"--rerun {value!r}: expected one or more of {', '.join(RERUNNABLE)} "
                         f"(comma-separated), e.g. --rerun failed,stalled")
    return tuple(dict.fromkeys(names))


def mark(trial: TrialState) -> None:
    """``trial`` (failed, diverged or stalled) waits for its next attempt, retries anew."""
    trial.reruns.append({"requested": now_iso(), "was": trial.state, "after_attempt": trial.attempts,
                         "history": len(trial.history)})
    trial.move("rerun")
    trial.recorded = False
    trial.exit_code, trial.reason, trial.handle, trial.finished = None, "", None, None


class Rerun:
    """``Engine.run``'s ``prepare`` for ``--rerun``: mark the trials under the lock, or refuse
    (SweepError, nothing written) when sweep.json changed meanwhile or nothing is left to run."""

    def __init__(self, engine: Engine, states: tuple[str, ...]):
        self.engine, self.states = engine, states

    def __call__(self) -> None:
        engine, state = self.engine, self.engine.state
        on_disk = engine.sdir.load()
        if [t.to_dict() for t in on_disk.trials] != [t.to_dict() for t in state.trials]:
            raise SweepError(f"{engine.sdir.path}: sweep.json changed while this command waited for "
                             f"it (another controller ran the sweep); nothing was rerun, run it again")
        chosen = [t for t in state.trials if t.state in self.states]
        unfinished = [t for t in state.trials if t.state not in FINAL]
        wanted = " or ".join(self.states)
        if not chosen and not unfinished:
            counts = ", ".join(f"{n} {s}" for s, n in sorted(Counter(t.state for t in state.trials).items()))
            raise SweepError(f"sweep {state.name} has no {wanted} trial to rerun ({counts}); "
                             f"nothing was changed")
        for trial in chosen:
            mark(trial)
        engine.save()
        drill.point("rerun-marked")
        ids = ", ".join(t.id for t in chosen)
        engine.log(f"rerun by pid {os.getpid()}: {len(chosen)} {wanted} trial(s) run again"
                   + (f" ({ids})" if chosen else "")
                   + (f"; {len(unfinished)} unfinished trial(s) go on" if unfinished else ""))
