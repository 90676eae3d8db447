"""``imf suggest [DIR]``: the next runs of an experiment loop, decided from what DIR holds.

Reads the report data of DIR (imf.report: trials, cells of trials that differ only in seed,
their noise, curves), its scoreboard (the overrides each trial ran with) and ITERATION_LOG.md,
and proposes ready-to-run ``imf trial`` commands, each with one line of reason (imf/suggest/rules.py):
more seeds for cells tied within noise with the best, the best cell's untried neighbours along
each grid axis, a warm-start continuation when the best run was still rising at its end, an
``imf ensemble`` of the best run's top checkpoints when they are tied within noise, and from
imf/suggest/data_rules.py: a warm start on twice the data when the best run overfits (again
while each doubling gains), a curriculum when the best cell's runs diverged or stalled early.
Nothing already tried (or made) is proposed.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imf.errors import ReportError
from imf.report import IMF, Report, Terms, build_report, report_terms
from imf.store import CONFIG, SWEEP_STATE, IterationLogStore, is_run_dir, read_json_object
from imf.suggest.data_rules import curriculum, doubling_gain, more_data
from imf.suggest.rules import Context, Proposal, continuation, ensemble, more_seeds, neighbours, unique_id
from imf.suggest.tried import full_config, read_tried

__all__ = ["Proposal", "Suggestions", "suggest", "best_cell", "unique_id", "command_text", "render_text",
           "as_json", "write_hypothesis", "doubling_gain"]


@dataclass
class Suggestions:
    folder: Path
    best: dict[str, Any]  # label, mean, se, n, noise, trial
    proposals: list[Proposal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    logged: dict[str, str] = field(default_factory=dict)  # proposal id -> hypothesis that has it
    terms: Terms = IMF  # how the best line shows its score: a program's metric as written, or imf's


def _prefix(folder: Path, report: Any) -> str:
    """Trial-id prefix of new runs: the sweep's name, else the config name of the best run."""
    if (folder / SWEEP_STATE).is_file():
        try:
            name = read_json_object(folder / SWEEP_STATE).get("name")
        except ValueError:
            name = None
        if isinstance(name, str) and name:
            return name
    for trial in report.trials:
        if trial.run_dir and (Path(trial.run_dir) / CONFIG).is_file():
            name = full_config(Path(trial.run_dir)).get("name")
            if isinstance(name, str) and name:
                return name
    return folder.resolve().name or "imf"


def suggest(folder: Path) -> Suggestions:
    """Proposals for the next runs in ``folder`` (a sweep folder or a folder of runs)."""
    folder = Path(folder)
    report = build_report([folder])  # checks the folder
    cells = [c for c in report.trends.cells if c.mean is not None]
    if not cells:
        raise ReportError(f"no test_mean_score in any of the {len(report.trials)} trial(s) under "
                          f"{folder} (no rollout yet); nothing to suggest from yet")
    best = max(cells, key=lambda c: c.mean)
    # Given one run folder, new runs go beside it (where its stores are), never inside it.
    root = folder.resolve().parent if is_run_dir(folder) else folder  # Path(".").parent is "."
    ctx = Context(root, report, read_tried(root, report.trials), _prefix(root, report),
                  terms=report_terms(report.ranked_by))
    continuation(ctx, best)
    more_data(ctx, best)
    neighbours(ctx, best)
    more_seeds(ctx, best)
    ensemble(ctx, best)
    curriculum(ctx, best)
    result = Suggestions(root, best_cell(report) or {}, ctx.proposals, ctx.notes, terms=ctx.terms)
    for block in ctx.tried.hypotheses:
        for proposal in result.proposals:
            if proposal.id in (block.get("command") or "").split() and proposal.id not in result.logged:
                result.logged[proposal.id] = block["id"]
    return result


def best_cell(report: Report) -> dict[str, Any] | None:
    """The report's best cell (the first of equal means) and its best run: label, mean, se, n,
    noise, trial, n_emb, n_layer, and a program's metric and goal (how it prints: metric_terms);
    None when no cell has a score."""
    cells = [c for c in report.trends.cells if c.mean is not None]
    if not cells:
        return None
    best = max(cells, key=lambda c: c.mean)
    top = max((t for t in report.trials if t.cell == best.label and t.best_score is not None),
              key=lambda t: t.best_score)
    return {"label": best.label, "mean": best.mean, "se": best.se, "n": best.n,
            "noise": best.noise, "trial": top.id, "n_emb": best.n_emb, "n_layer": best.n_layer,
            **report_terms(report.ranked_by).to_dict()}


def command_text(proposal: Proposal) -> str:
    return shlex.join(proposal.argv)


def _best_line(s: Suggestions) -> str:
    b = s.best
    noise = {"seeds": "SE over seeds", "episodes": "SE from the episodes"}.get(b["noise"], "noise unknown")
    return (f"best cell {b['label']}: {s.terms.pm(b['mean'], b['se'])} ({noise}, n {b['n']}), "
            f"best run {b['trial']}")


def render_text(s: Suggestions) -> str:
    lines = [f"{_best_line(s)}; in {s.folder}", ""]
    if not s.proposals:
        lines.append("nothing new to propose (see the notes)")
    groups: dict[tuple[str, str], list[Proposal]] = {}
    for proposal in s.proposals:  # the runs of one reason (its seeds) under one heading
        groups.setdefault((proposal.kind, proposal.reason), []).append(proposal)
    for number, ((kind, reason), members) in enumerate(groups.items(), start=1):
        lines.append(f"{number}. {kind}: {reason}")
        for proposal in members:
            logged = f"   # already in {s.logged[proposal.id]}" if proposal.id in s.logged else ""
            lines.append(f"   {command_text(proposal)}{logged}")
    if s.notes:
        lines += ["", "notes:"] + [f"  - {note}" for note in s.notes]
    return "\n".join(lines) + "\n"


def as_json(s: Suggestions) -> list[dict[str, Any]]:
    """The proposals as a JSON list: kind, id, reason, command (a string and argv), changes, seed."""
    return [{"kind": p.kind, "id": p.id, "reason": p.reason, "command": command_text(p),
             "argv": list(p.argv), "changes": p.settings, "seed": p.seed,
             "hypothesis": s.logged.get(p.id)} for p in s.proposals]


def write_hypothesis(s: Suggestions) -> str:
    """Append one hypothesis block with every proposal to ITERATION_LOG.md; returns its id."""
    if not s.proposals:
        raise ReportError(f"imf suggest --write-hypothesis: nothing new to propose in {s.folder}; "
                          "no hypothesis written")
    fresh = [p for p in s.proposals if p.id not in s.logged]
    if not fresh:
        ids = sorted(set(s.logged.values()))
        raise ReportError(f"imf suggest --write-hypothesis: every proposal is already in "
                          f"{', '.join(ids)} of {s.folder}/ITERATION_LOG.md; nothing written")
    kinds = sorted({p.kind for p in fresh})
    text = "\n".join([f"The next runs ({', '.join(kinds)}) beat or separate from the best cell "
                      f"{s.best['label']} ({s.terms.pm(s.best['mean'], s.best['se'])})."]
                     + [f"- {p.id}: {p.reason}" for p in fresh])
    margin = " by more than its noise (1.96 x SE of the difference)" if s.best["se"] is not None else ""
    beats = "scores above" if not s.terms.program else \
        f"has a {s.terms.name} {'below' if s.terms.better == 'lower' else 'above'}"
    expect = (f"a proposed run {beats} {s.terms.pm(s.best['mean'], s.best['se'])}{margin}, or the cells "
              "tied with the best separate once they have more seeds")
    command = "\n".join(command_text(p) for p in fresh)
    return IterationLogStore(s.folder).add_hypothesis(text, expect, command)
