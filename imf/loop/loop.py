"""``imf loop DIR``: suggest -> run -> conclude, round after round.

Each round takes the top ``per_round`` proposals of ``imf suggest`` on DIR, writes them as one
hypothesis block in DIR/ITERATION_LOG.md (what is tried, why, the range the current best and
its noise allow), runs them as one sweep in DIR/loop-rNN (the sweep engine: its planner,
retries, stall detection and stores), then fills the block's result and conclusion: each run
against the best before the round, better / worse / no clear difference with the difference
± its SE. The loop stops when nothing is left to propose, its rounds or hours are spent, or
two rounds in a row gained nothing beyond noise. Every decision is in DIR/loop.json first
(imf/loop/state.py), so ``imf loop --resume DIR`` after a kill finishes the round it was in.
"""
from __future__ import annotations

import math
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from imf import drill
from imf.config import check_episodes
from imf.errors import LoopError, ReportError
from imf.loop.state import LOOP_FILE, LoopState, Outcome, Planned, Round, load_loop, save_loop
from imf.loop.sweep import round_sweep, run_round_sweep
from imf.report import IMF, Report, Terms, TrialRow, basis_of, build_report, reach_words, report_terms
from imf.stats import Z95, clear_difference, difference_se, pm
from imf.store import IterationLogStore
from imf.suggest import Proposal, best_cell, command_text, doubling_gain, suggest, unique_id
from imf.sweep import load_hosts, resolve_queues

Echo = Callable[[str], None]
__all__ = ["LoopRequest", "check_request", "dry_run", "resume_loop", "start_loop"]


@dataclass
class LoopRequest:
    folder: Path
    queues: list[str]
    rounds: int
    per_round: int = 3
    hours: float | None = None
    hosts: str | None = None
    final_eval: int | None = None


def check_request(req: LoopRequest) -> LoopState:
    """The loop's state for ``req``, every setting checked; nothing is written."""
    if not req.folder.is_dir():
        raise LoopError(f"{req.folder} is not a folder; give a sweep folder or a folder of runs")
    if req.rounds < 1:
        raise LoopError(f"--rounds {req.rounds}: give 1 or more rounds")
    if req.per_round < 1:
        raise LoopError(f"--per-round {req.per_round}: give 1 or more proposals per round")
    if req.hours is not None and not 0 < req.hours < math.inf:
        raise LoopError(f"--hours {req.hours}: give a number of hours > 0")
    if req.final_eval is not None:
        check_episodes(req.final_eval)  # the seeds against each run's eval settings: its trial
    resolve_queues(req.queues, load_hosts(req.hosts))  # bad specs and hosts files fail here
    return LoopState(list(req.queues), req.rounds, req.per_round, req.hours, req.hosts,
                     req.final_eval, started_unix=time.time())


def start_loop(req: LoopRequest, echo: Echo = print) -> LoopState:
    state = check_request(req)
    if (req.folder / LOOP_FILE).exists():
        raise LoopError(f"{req.folder} already holds a loop ({LOOP_FILE}); continue it with "
                        f"imf loop --resume {req.folder}")
    first = plan_round(req.folder, state)  # a folder without scored runs fails before any write
    state.rounds.extend([first] if first else [])
    save_loop(req.folder, state)
    return run_loop(req.folder, state, echo)


def resume_loop(folder: Path, echo: Echo = print) -> LoopState:
    state = load_loop(folder)
    if state.status == "finished":
        echo(f"the loop in {folder} finished: {state.stop_reason}")
        return state
    return run_loop(folder, state, echo)


def run_loop(folder: Path, state: LoopState, echo: Echo) -> LoopState:
    state.status = "running"
    save_loop(folder, state)
    try:
        while True:
            current = state.open_round()
            if current is None:
                why = stop_reason(state)
                current = None if why else plan_round(folder, state)
                if current is None:
                    return _finish(folder, state, why or _nothing_left(folder), echo)
                state.rounds.append(current)
                save_loop(folder, state)
            _run_round(folder, state, current, echo)
    except KeyboardInterrupt:
        state.status = "interrupted"
        save_loop(folder, state)
        echo(f"loop interrupted; running trials go on; continue with imf loop --resume {folder}")
        raise


def _run_round(folder: Path, state: LoopState, current: Round, echo: Echo) -> None:
    if current.hypothesis is None:
        current.hypothesis = log_round_hypothesis(folder, current)
        drill.point("hypothesis-logged")
        save_loop(folder, state)
        echo(f"round {current.number}: hypothesis {current.hypothesis} in {folder / 'ITERATION_LOG.md'}")
    current.status = "running"
    save_loop(folder, state)
    run_round_sweep(folder, state, current, echo)
    conclude_round(folder, current)
    drill.point("round-concluded")
    save_loop(folder, state)
    echo(render_round(current))


def stop_reason(state: LoopState) -> str:
    """Why no further round starts ("" when one may)."""
    done = [r for r in state.rounds if r.status == "concluded"]
    if len(done) >= state.rounds_max:
        return f"{len(done)} round(s) done (--rounds {state.rounds_max})"
    if state.hours is not None and time.time() - state.started_unix >= state.hours * 3600:
        return f"{state.hours:g} hour(s) spent (--hours)"
    if len(done) >= 2 and not done[-1].gain and not done[-2].gain:
        return "two rounds in a row brought no gain beyond noise"
    return ""


def _finish(folder: Path, state: LoopState, why: str, echo: Echo) -> LoopState:
    state.status, state.stop_reason = "finished", why
    save_loop(folder, state)
    best = state.rounds[-1].best_after if state.rounds else {}
    echo(f"loop finished: {why}" + (f"; best cell {best['label']} {_pm(best)}"
                                    f" ({best['trial']})" if best else ""))
    return state


def _pm(best: dict) -> str:
    """A best cell's mean ± SE in the terms it was ranked in (its metric and goal, when a program's)."""
    return report_terms(best).pm(best["mean"], best["se"])


# planning --------------------------------------------------------------------
def _nothing_left(folder: Path) -> str:
    ensembles = [p for p in suggest(folder).proposals if p.argv[1:2] == ["ensemble"]]
    return "no trial proposal is left" + (
        f"; imf suggest proposes an ensemble: {command_text(ensembles[0])}" if ensembles else "")


def _trial_name(proposal: Proposal, taken: set[str]) -> str:
    """A folder-safe trial id unique in the loop (the report's id of a loop run holds its
    round folder, loop-rNN/ID: a continuation of it is named after ID)."""
    return unique_id(proposal.id.rsplit("/", 1)[-1], taken)


def _planned(proposal: Proposal, name: str) -> Planned:
    """The proposal's ``imf trial`` argv as the pieces a sweep trial is made of."""
    argv = proposal.argv  # imf trial CONFIG [overrides] [--init-from CKPT] --seed N --id ID --out DIR
    options = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    init_from = argv[argv.index("--init-from") + 1] if "--init-from" in argv else None
    return Planned(name, proposal.kind, proposal.reason, str(Path(argv[2]).resolve()),
                   list(argv[3:options]), proposal.seed,
                   str(Path(init_from).resolve()) if init_from else None)


def plan_round(folder: Path, state: LoopState) -> Round | None:
    """The next round from ``imf suggest`` (its ``imf trial`` proposals), or None when it
    proposes nothing new."""
    found = suggest(folder)
    # an ensemble is made from checkpoints by `imf ensemble`, not trained: a sweep does not run it
    untried = [p for p in found.proposals if p.id not in found.logged and p.argv[1:2] == ["trial"]]
    untried = untried[: state.per_round]
    if not untried:
        return None
    taken = {p.id for r in state.rounds for p in r.proposals}
    number = len(state.rounds) + 1
    current = Round(number, f"loop-r{number:02d}", dict(found.best))
    for proposal in untried:
        name = _trial_name(proposal, taken)
        taken.add(name)
        current.proposals.append(_planned(proposal, name))
    return current


def trial_command(folder: Path, current: Round, planned: Planned) -> str:
    """The ``imf trial`` command the round's sweep runs for ``planned`` (for the log)."""
    argv = ["imf", "trial", planned.config, *planned.overrides,
            *(["--init-from", planned.init_from] if planned.init_from else []),
            "--seed", str(planned.seed), "--id", planned.id, "--out", str(folder / current.sweep / planned.id)]
    return shlex.join(argv)


# the log ---------------------------------------------------------------------
def _expected(best: dict) -> str:
    terms = report_terms(best)
    if best.get("se") is None:
        scores = f"scores {best['mean']:.3f}" if not terms.program else f"has {terms.name} {terms.value(best['mean']):.3f}"
        return (f"the best cell {best['label']} {scores} with unknown noise; a run is better when its "
                f"{terms.what} is {terms.better} by more than 1.96 SE of the difference")
    low, high = best["mean"] - Z95 * best["se"], best["mean"] + Z95 * best["se"]
    gain = "a score above the best" if not terms.program else \
        f"a {terms.name} {'below' if terms.better == 'lower' else 'above'} the best's"
    return (f"without a real change a run scores {terms.within(low, high)} (the best cell "
            f"{best['label']} {_pm(best)}, 1.96 SE); a gain is {gain} "
            "by more than 1.96 SE of the difference")


def log_round_hypothesis(folder: Path, current: Round) -> str:
    """The round's block in ITERATION_LOG.md: the one already there for it (a loop killed
    after writing it), else a new one."""
    store = IterationLogStore(folder)
    commands = [trial_command(folder, current, p) for p in current.proposals]
    marker = f"imf loop round {current.number} ({current.sweep})"
    for block in store.hypotheses():
        if (block.get("hypothesis") or "").startswith(marker):
            return block["id"]
    text = "\n".join([f"{marker}: {len(current.proposals)} run(s) against the best cell "
                      f"{current.best_before['label']} ({current.best_before['trial']})."]
                     + [f"- {p.id} ({p.kind}): {p.reason}" for p in current.proposals])
    return store.add_hypothesis(text, _expected(current.best_before), "\n".join(commands))


# concluding ------------------------------------------------------------------
def _outcome(report: Report, run_dir: Path, planned: Planned, best: dict) -> Outcome:
    row = _row_at(report, run_dir)
    if row is None or row.best_score is None:
        return Outcome(planned.id, row.status if row else "missing")
    out = Outcome(planned.id, row.status, row.best_score, row.best_se, row.success_rate, row.selection,
                  cell=row.cell)
    out.diff = row.best_score - best["mean"]
    if row.best_se is not None and best.get("se") is not None:
        out.diff_se = difference_se(row.best_se, best["se"])
        if clear_difference(row.best_score, row.best_se, best["mean"], best["se"]):
            out.verdict = "better" if out.diff > 0 else "worse"
        else:
            out.verdict = "no clear difference"
    else:
        out.verdict = "no clear difference (noise unknown)"
    return out


def conclude_round(folder: Path, current: Round) -> None:
    """Each run against the best before the round; the block's result and conclusion filled."""
    try:
        report = build_report([folder])
    except ReportError as exc:
        raise LoopError(f"round {current.number}: its results cannot be read ({exc})") from None
    after = best_cell(report)
    if after is None:
        raise LoopError(f"round {current.number}: no run in {folder} has a score yet")
    best = current.best_before
    current.outcomes = [_outcome(report, folder / current.sweep / p.id, p, best)
                        for p in current.proposals]
    current.gain = any(o.verdict == "better" for o in current.outcomes)
    current.best_after = after
    result = "\n".join(_result_line(o, report_terms(best)) for o in current.outcomes)
    moved = after["label"] != best["label"] or after["trial"] != best["trial"]
    conclusion = "\n".join(
        [f"{o.id}: {o.verdict}" for o in current.outcomes] + _seed_cells(report, current)
        + _doublings(report, folder, current)
        + [_basis_line(report, current, best)]
        + [("gain beyond noise; " if current.gain else "no gain beyond noise; ")
           + (f"the best is now {after['label']} {_pm(after)} ({after['trial']})"
              if moved else f"the best stays {after['label']} {_pm(after)}")])
    IterationLogStore(folder).conclude(current.hypothesis or "", result, conclusion)
    current.status = "concluded"


def _basis_line(report: Report, current: Round, best: dict) -> str:
    """What the runs and the best before them were equal in, and whether they made as many steps."""
    ids = {p.id for p in current.proposals}
    runs = [t for t in report.trials if t.id in ids or (t.run_dir and Path(t.run_dir).name in ids)]
    before = [t for t in report.trials if t.id == best.get("trial")]
    basis = basis_of(runs + before)
    reach = reach_words([("this round's runs", runs), (f"the best before ({best.get('trial')})", before)],
                        "the proposals' changes") if runs and before else None
    return f"compared {basis.text}" + (f": {reach}" if reach else "")


def _seed_cells(report: Report, current: Round) -> list[str]:
    """For the cells this round gave more seeds: their mean over the seeds now (one run of a
    seed is the cell's noise, not a change)."""
    kinds = {p.id: p.kind for p in current.proposals}
    labels = dict.fromkeys(o.cell for o in current.outcomes if kinds[o.id] == "seeds" and o.cell)
    cells = {c.label: c for c in report.trends.cells if c.mean is not None}
    terms = report_terms(current.best_before)
    return [f"cell {label} over {cells[label].n} seeds: {terms.pm(cells[label].mean, cells[label].se)}"
            for label in labels if label in cells]


def _row_at(report: Report, run_dir: Path) -> TrialRow | None:
    return next((t for t in report.trials if t.run_dir and Path(t.run_dir).resolve() == run_dir.resolve()), None)


def _doublings(report: Report, folder: Path, current: Round) -> list[str]:
    """For the round's more-data runs: each against the run whose checkpoint it warm-started
    from (the next suggest doubles again from a run that gained beyond noise)."""
    lines = []
    for p in current.proposals:
        if p.kind != "more-data" or not p.init_from:
            continue
        child = _row_at(report, folder / current.sweep / p.id)
        parent = _row_at(report, Path(p.init_from).parent.parent)  # <run>/checkpoints/best.pt
        if child is None or parent is None or child.best_score is None or parent.best_score is None:
            continue
        gained, words = doubling_gain(child, parent)
        lines.append(f"more data: {words}; " + ("the doubling paid" if gained else "the doubling stopped paying"))
    return lines


def _result_line(o: Outcome, terms: Terms = IMF) -> str:
    if o.score is None:
        return f"{o.id}: no score ({o.status})"
    success = "" if o.success is None else f", success {o.success:.0%}"
    diff = "" if o.diff is None else f"; {terms.gap(o.diff, o.diff_se)}"
    return f"{o.id}: {terms.pm(o.score, o.se)}{success} ({o.status}){diff} against the best before"


def render_round(current: Round) -> str:
    rows = [f"round {current.number} ({current.sweep}, {current.hypothesis}) against "
            f"{current.best_before['label']} {_pm(current.best_before)}:"]
    terms = report_terms(current.best_before)
    width = max(len(p.id) for p in current.proposals)
    kinds = {p.id: p.kind for p in current.proposals}
    kind_width = max(9, *(len(k) for k in kinds.values()))
    for o in current.outcomes:
        score = "-" if o.score is None else pm(terms.value(o.score), o.se)
        diff = "-" if o.diff is None else terms.gap(o.diff, o.diff_se, named=False)
        rows.append(f"  {o.id:<{width}}  {kinds[o.id]:<{kind_width}}  {score:<15}  {diff:<16}  {o.verdict}")
    after = current.best_after
    rows.append(f"  best now: {after['label']} {_pm(after)} ({after['trial']})")
    return "\n".join(rows)


def dry_run(folder: Path, queues: list[str], per_round: int = 3, hosts: str | None = None) -> str:
    """The next round's proposals and commands (the open round's, when a loop stopped in one)."""
    state = load_loop(folder) if (folder / LOOP_FILE).exists() else \
        check_request(LoopRequest(folder, list(queues), 1, per_round, hosts=hosts))
    current = state.open_round() or plan_round(folder, state)
    if current is None:
        return f"nothing new to propose in {folder}; a loop would stop here"
    sdir, sweep, _ = round_sweep(folder, state, current)
    lines = [f"round {current.number} in {sdir.path} on {', '.join(q.name for q in sweep.queues)} "
             f"(against {current.best_before['label']} "
             f"{_pm(current.best_before)}):"]
    for p in current.proposals:
        lines += [f"- {p.id} ({p.kind}): {p.reason}", f"  {trial_command(folder, current, p)}"]
    return "\n".join(lines)


