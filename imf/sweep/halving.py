"""Noise-aware successive halving (``imf sweep --halving ETA --rungs E1,E2,...``).

At each rung epoch E (epochs counted from 1, as ``imf status`` shows them) a trial's score is
the test score of its log row for epoch E, with the standard error of that mean from the row's
per-episode scores (``test_per_seed``). The rule is asynchronous, as in ASHA: the rung's cut
is taken over the trials that have a score at the rung *so far* (stopped and ended trials
included). Once at least ETA trials have a score there, with n of them the cut is the
floor(n / ETA)-th best score; a trial below it is stopped only when the gap exceeds z standard
errors of the difference, so a trial tied with the cut within noise is never stopped. z is
1.96 (the one-sided 2.5% of ``imf report``'s rule for ties) corrected for the m = n -
floor(n / ETA) trials compared with the cut (Bonferroni: the one-sided 2.5% / m point; z 2.64
for m = 6): with one 1.96-SE test per comparison a best among near rivals was stopped in 6.5%
of planted sweeps, with the correction in 1.8% (benchmarks/RUNS.md, "Successive halving on
near rivals"). A trial that reached the rung before ETA scores existed is judged as soon as
they do, while it still runs.

Every decision (kept or stopped) is made once per trial and rung and kept in sweep.json
(``SweepState.halving``); a restarted controller reads them back and never decides again: a
trial with a stop decision that still runs is stopped again, never retried.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from imf.errors import SweepError
from imf.stats import Z95, difference_se, pm, standard_error
from imf.store import PROGRAM_SCORE, first_number, is_epoch_row, parse_log, row_episode_scores, row_score

from imf.scheduler import JobStatus
from imf.sweep.state import Decision, HalvingState, RungScore, SweepState, TrialState

RUNGS_RE = re.compile(r"^\s*\d+(\s*,\s*\d+)*\s*$")
STATUS_STOPS = 10  # stops whose reason ``imf status`` prints (the latest)


def parse_rungs(text: str) -> list[int]:
    """``"2,4,8"`` -> [2, 4, 8]: strictly increasing epochs >= 1 (SweepError otherwise)."""
    rungs = [int(v) for v in text.split(",")] if RUNGS_RE.match(text) else []
    if not rungs or min(rungs) < 1 or any(b <= a for a, b in zip(rungs, rungs[1:])):
        raise SweepError(f"--rungs '{text}': expected strictly increasing epochs >= 1, e.g. 2,4,8")
    return rungs


def plan_halving(eta: int | None, rungs: str | None) -> HalvingState | None:
    """The checks that need no trial: ETA, the rungs, and that both flags come together."""
    if eta is None and rungs is None:
        return None
    if eta is None:
        raise SweepError("--rungs needs --halving ETA (successive halving keeps the top 1/ETA at each rung)")
    if rungs is None:
        raise SweepError(f"--halving {eta} needs --rungs E1,E2,... (the epochs at which trials are compared)")
    if eta < 2:
        raise SweepError(f"--halving {eta}: ETA must be an integer >= 2 (the top 1/ETA of each rung go on)")
    return HalvingState(eta, parse_rungs(rungs))


def check_rungs(halving: HalvingState, epochs: dict[str, int], rollout_every: int | None) -> None:
    """Every rung within every trial's epochs (``epochs``: trial id -> epochs) and, when the
    sweep's ``training.rollout_every`` is known, on an epoch that rolls out (or the last one)."""
    rungs = ",".join(map(str, halving.rungs))
    for tid, n in epochs.items():
        beyond = [r for r in halving.rungs if r > n]
        if beyond:
            raise SweepError(f"--rungs {rungs}: rung {beyond[0]} is beyond the {n} epochs of "
                             f"trial {tid}; every rung must be at most the trials' epochs")
        if rollout_every:
            bare = [r for r in halving.rungs if r % rollout_every and r != n]
            if bare:
                raise SweepError(f"--rungs {rungs}: epoch {bare[0]} has no rollout score "
                                 f"(training.rollout_every={rollout_every}); use multiples of it")


# ---------------------------------------------------------------------- the rule
@dataclass
class Verdict:
    outcome: str  # "wait" (fewer than ETA scores at the rung), "kept" or "stopped"
    reason: str
    cut: float | None = None
    compared: int = 0


def rung_score(trial: str, rung: int, row: dict[str, Any]) -> RungScore | None:
    """The trial's score at ``rung`` from its log row for that epoch (None without a score)."""
    score = row_score(row)
    if score is None:  # a trainer program's metric, as imf mirrors it (imf/train/metric_watch.py)
        score = first_number(row, (PROGRAM_SCORE,))
        return None if score is None else RungScore(trial, rung, score, first_number(row, (f"{PROGRAM_SCORE}_se",)), 0)
    episodes = row_episode_scores(row)
    se = standard_error(episodes) if len(episodes) >= 2 else None
    return RungScore(trial, rung, score, se, len(episodes))


ONE_SIDED = 1 - NormalDist().cdf(Z95)  # 0.025: the false-alarm rate of one 1.96-SE comparison


def stop_z(below: int) -> float:
    """The z a stop needs when ``below`` trials at a rung are compared with its cut: the one-sided
    2.5% of one 1.96-SE comparison split over them (Bonferroni); 1.96 for one."""
    return NormalDist().inv_cdf(1 - ONE_SIDED / max(1, below))


def judge(mine: RungScore, at_rung: list[RungScore], eta: int) -> Verdict:
    """The decision for ``mine`` given every score at its rung so far (``mine`` among them)."""
    n = len(at_rung)
    if n < eta:
        return Verdict("wait", f"{n} of {eta} scores at epoch {mine.rung}", None, n)
    ranked = sorted(at_rung, key=lambda s: -s.score)
    cut = ranked[n // eta - 1]
    if mine.score >= cut.score:
        return Verdict("kept", f"in the top 1/{eta} at epoch {mine.rung}", cut.score, n)
    if mine.se is None or cut.se is None:
        return Verdict("kept", f"below the cut {cut.score:.4f} at epoch {mine.rung}, but without "
                       "per-episode scores the noise is unknown", cut.score, n)
    se = difference_se(mine.se, cut.se)
    gap = cut.score - mine.score
    below = n - n // eta
    z, trials = stop_z(below), f"{below} trial{'s' if below != 1 else ''} below the cut"
    if gap > z * se:
        return Verdict("stopped", f"halving at epoch {mine.rung}: {pm(gap, se, mark='+-')} below the "
                       f"cut {cut.score:.4f}, beyond {z:.2f} SE ({trials})", cut.score, n)
    return Verdict("kept", f"{pm(gap, se, mark='+-')} below the cut {cut.score:.4f} at epoch "
                   f"{mine.rung}: tied within noise (a stop needs {z:.2f} SE, {trials})",
                   cut.score, n)


# ---------------------------------------------------------------------- in the engine
class Halving:
    """The engine's side: rung scores from each poll's new log text, and the decisions."""

    def __init__(self, state: SweepState) -> None:
        self.state = state

    @property
    def on(self) -> HalvingState | None:
        return self.state.halving

    def verdict(self, trial: TrialState, status: JobStatus) -> str | None:
        """Note ``trial``'s rung scores in ``status.new_log``; the reason to stop it now (a stop
        decided now or before a restart), else None. A trial that ended by itself (exit 0) or
        has nothing left to run is never stopped; its scores still count for the cut."""
        hv = self.on
        if hv is None:
            return None
        self._note_scores(hv, trial, status.new_log)
        if status.done and status.exit_code == 0:
            return None
        stop = hv.stop_of(trial.id)
        if stop is not None:
            return stop.reason
        if status.done or (trial.epochs and trial.epoch >= trial.epochs):  # a program's: unknown (0)
            return None
        for rung in hv.rungs:
            if self._decide(hv, trial, rung) == "stopped":
                return hv.decisions[-1].reason
        return None

    def stopped(self, trial: TrialState) -> str | None:
        """The reason a stop decision gave for ``trial``, if there is one."""
        stop = self.on.stop_of(trial.id) if self.on is not None else None
        return stop.reason if stop else None

    def _note_scores(self, hv: HalvingState, trial: TrialState, text: str) -> None:
        complete = text[: text.rfind("\n") + 1]
        for row in parse_log(complete.splitlines()).rows:
            if not is_epoch_row(row) or row["epoch"] + 1 not in hv.rungs:
                continue
            rung = row["epoch"] + 1
            found = rung_score(trial.id, rung, row)
            if found is not None and hv.score_of(trial.id, rung) is None:
                hv.scores.append(found)  # the first attempt's score at a rung is the one judged

    def _decide(self, hv: HalvingState, trial: TrialState, rung: int) -> str | None:
        mine = hv.score_of(trial.id, rung)
        if mine is None or hv.decision_of(trial.id, rung) is not None:
            return None
        verdict = judge(mine, [s for s in hv.scores if s.rung == rung], hv.eta)
        if verdict.outcome == "wait":
            return None
        hv.decisions.append(Decision(trial.id, rung, verdict.outcome, verdict.reason, verdict.cut,
                                     verdict.compared))
        return verdict.outcome


# ---------------------------------------------------------------------- what people read
def describe(hv: HalvingState | None) -> str:
    if hv is None:
        return ""
    return f"successive halving: eta {hv.eta}, rungs {','.join(map(str, hv.rungs))}"


def status_lines(state: SweepState) -> list[str]:
    """``imf status`` notes: the rule, what it decided, and why each stopped trial stopped."""
    hv = state.halving
    if hv is None:
        return []
    kept = sum(d.outcome == "kept" for d in hv.decisions)
    stops = [d for d in hv.decisions if d.outcome == "stopped"]
    lines = [f"{describe(hv)}: {len(stops)} stopped, {kept} kept at a rung"]
    by_id = {t.id: t for t in state.trials}
    if len(stops) > STATUS_STOPS:
        lines.append(f"(the last {STATUS_STOPS} stops; every decision is in sweep.json's halving)")
    for d in stops[-STATUS_STOPS:]:
        shown = by_id[d.trial].state if d.trial in by_id else "?"
        lines.append(f"{d.trial} {shown}: {d.reason}")
    return lines
