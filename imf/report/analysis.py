"""Cells (trials that differ only in seed), ranking with ties, trends that respect the noise: all
on one score, the report's ranking (max, last-k or selection; ``imf.report.basis.Ranking``)."""
from __future__ import annotations

import math
import re
from typing import Any

from imf.report.axes import axis_trends, combined_se, effect_of, groups_by
from imf.report.basis import Basis, Ranking, basis_of, reach_words, with_basis
from imf.report.collect import SEED_IN_ID, WARM_START, RunRead, config_key
from imf.report.metric_terms import IMF, Terms
from imf.store import ID_HASH_CHARS
from imf.report.model import Cell, Group, TrialRow, Trends
from imf.stats import Z95, mean_sd, pm, tied_within_noise

HASHED_ID = re.compile(r"(-s\d+)-[0-9a-f]{%d}$" % ID_HASH_CHARS)  # ...-s42-1a2b3c: the trial's hash
SIZE_KEYS = ("policy.n_emb", "policy.n_layer", "policy.model.n_emb", "policy.model.n_layer")


def cell_label_of(trial_id: str) -> str:
    """The trial id without its ``-s<seed>`` part (and the trial hash a default id ends with,
    which names one seed's run, not the cell)."""
    return SEED_IN_ID.sub("", HASHED_ID.sub(r"\1", trial_id), count=1)


def _group_runs(runs: list[RunRead]) -> dict[str, list[RunRead]]:
    """Trials by cell label: same config without the seed; trials without a config file join
    the cell their id names (the id without ``-s<seed>``)."""
    by_config: dict[str, list[RunRead]] = {}
    for run in sorted((r for r in runs if r.config is not None), key=lambda r: r.row.id):
        by_config.setdefault(config_key(run.config), []).append(run)
    groups: dict[str, list[RunRead]] = {}
    for members in by_config.values():
        label = base = cell_label_of(members[0].row.id)
        number = 1
        while label in groups:
            number += 1
            label = f"{base}#{number}"
        groups[label] = members
    for run in sorted((r for r in runs if r.config is None), key=lambda r: r.row.id):
        groups.setdefault(cell_label_of(run.row.id), []).append(run)
    return groups


def _varying(runs: list[RunRead]) -> list[str]:
    configs = [r.config for r in runs if r.config is not None]
    keys = sorted({k for c in configs for k in c} - {WARM_START})  # a warm start is no setting
    return [k for k in keys if k not in SIZE_KEYS
            and len({config_key({"v": c.get(k)}) for c in configs}) > 1]


def shared_config(runs: list[RunRead]) -> dict[str, Any]:
    """Settings every trial with a config file has, with the same value."""
    configs = [r.config for r in runs if r.config is not None]
    if not configs:
        return {}
    varying = set(_varying(runs))
    return {k: v for k, v in configs[0].items() if k not in varying
            and all(k in c and config_key({"v": c[k]}) == config_key({"v": v}) for c in configs)}


def _mean_of(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def by_seed(rows: list[TrialRow]) -> tuple[list[TrialRow], list[str]]:
    """One row per seed (the first in ``rows``' order) and the ids of the others: the same seed
    again is the same run again, so it is counted once and flagged; rows without a seed stay apart."""
    kept: list[TrialRow] = []
    seen: set[int] = set()
    duplicates = []
    for row in rows:
        if isinstance(row.seed, int) and row.seed in seen:
            duplicates.append(row.id)
            continue
        if isinstance(row.seed, int):
            seen.add(row.seed)
        kept.append(row)
    return kept, duplicates


def _cell(label: str, members: list[RunRead], varying: list[str]) -> Cell:
    all_rows = [m.row for m in members]
    config = next((m.config for m in members if m.config is not None), {})
    sized = next((r for r in all_rows if isinstance(r.n_emb, int)), all_rows[0])
    scored_first = sorted(all_rows, key=lambda r: (r.score is None, r.id))
    rows, duplicates = by_seed(scored_first)
    cell = Cell(label=label, n_emb=sized.n_emb, n_layer=sized.n_layer,
                params={k: config.get(k) for k in varying}, trials=[r.id for r in all_rows],
                seeds=[r.seed for r in all_rows], duplicates=duplicates,
                unscored=sum(r.score is None for r in rows))
    scores = [r.score for r in rows if r.score is not None]
    if scores:
        cell.n, (cell.mean, sd) = len(scores), mean_sd(scores)
        cell.low, cell.high = min(scores), max(scores)
        if len(scores) >= 2:
            # A few seeds can agree by luck: never claim less noise than the episodes carry.
            cell.sd, cell.se, cell.noise = sd, sd / math.sqrt(len(scores)), "seeds"
            episodes = combined_se([r.score_se for r in rows if r.score is not None])
            if episodes is not None and episodes > cell.se:
                cell.se, cell.noise = episodes, "episodes"
        else:
            only = next(r for r in rows if r.score is not None)
            if only.score_se is not None:
                cell.se, cell.noise = only.score_se, "episodes"
    cell.last_k = _mean_of([r.last_k for r in rows if r.last_k is not None])
    cell.success = _mean_of([r.success_rate for r in rows if r.success_rate is not None])
    cell.selection_success = _mean_of([r.selection_success for r in rows if r.selection_success is not None])
    selection = [r for r in rows if r.selection is not None]
    if selection:
        cell.selection_n, (cell.selection, sd) = len(selection), mean_sd([r.selection for r in selection])
        cell.selection_se = _at_least(sd / math.sqrt(len(selection)) if len(selection) >= 2 else None,
                                  combined_se([r.selection_se for r in selection]))
    return cell


def _at_least(over_seeds: float | None, episodes: float | None) -> float | None:
    """The larger of two SEs, either of which may be unknown."""
    known = [se for se in (over_seeds, episodes) if se is not None]
    return max(known) if known else None


def build_cells(runs: list[RunRead]) -> list[Cell]:
    """One cell per config without the seed; sets each trial's and curve's ``cell``."""
    varying = _varying(runs)
    cells = []
    for label, members in _group_runs(runs).items():
        for member in members:
            member.row.cell = member.curve.cell = label
        cells.append(_cell(label, members, varying))
    return sorted(cells, key=lambda c: (c.n_emb or 0, c.n_layer or 0, c.label))


def score_rows(rows: list[TrialRow], ranking: Ranking) -> None:
    """Set each trial's ``score`` (and its SE) on the ranking's basis; an ensemble's is its
    selection-seed score, the one it has."""
    for row in rows:
        row.score, row.score_se = (row.selection, row.selection_se) if row.is_ensemble else ranking.score(row)


def rank_trials(rows: list[TrialRow]) -> None:
    """Sort by score (then earlier best epoch; trials without one by max), number the scored
    ones, mark ties with #1. Ensembles follow, by their selection-seed score, each set against
    the best trial on the same selection seeds (a max over test rollouts is not on their seeds)."""
    rows.sort(key=lambda r: (r.is_ensemble, r.score is None,
                             -(r.score if r.score is not None else r.best_score or 0.0),
                             r.best_epoch if isinstance(r.best_epoch, int) else 1 << 30, r.id))
    _against_selection([r for r in rows if r.is_ensemble], [r for r in rows if not r.is_ensemble])
    scored = [r for r in rows if r.score is not None and not r.is_ensemble]
    for rank, row in enumerate(scored, start=1):
        row.rank = rank
    if not scored:
        return
    top = scored[0]
    for row in scored:
        if row is top:
            row.tied = True
        elif top.score_se is not None and row.score_se is not None:
            row.tied = tied_within_noise(top.score, top.score_se, row.score, row.score_se)


def _against_selection(ensembles: list[TrialRow], trials: list[TrialRow]) -> None:
    scored = [t for t in trials if t.selection is not None]
    top = max(scored, key=lambda t: t.selection, default=None)
    for row in ensembles:
        if top is None or row.selection is None:
            row.vs_selection = "no trial on the selection seeds"
        elif row.selection_se is None or top.selection_se is None:
            row.vs_selection = f"? vs {top.id} (noise unknown)"
        elif tied_within_noise(row.selection, row.selection_se, top.selection, top.selection_se):
            row.vs_selection = f"tied with {top.id}"
        else:
            row.vs_selection = f"{'above' if row.selection > top.selection else 'below'} {top.id}"


# trends -----------------------------------------------------------------------
def _effect(groups: list[Group], kind: str, key: str, rows: list[TrialRow], basis: Basis,
            noun: str, sign: int) -> dict[str, Any] | None:
    """How the mean score moves from the smallest to the largest n_emb or n_layer."""
    what = "width" if key == "n_emb" else "depth"
    return effect_of(groups, kind, key, basis, lambda value: _rows_of(rows, key, value),
                     (f"{kind} helps", f"{kind} hurts", what), noun, sign)


def _rows_of(rows: list[TrialRow], key: str, value: int) -> list[TrialRow]:
    return [r for r in rows if getattr(r, key) == value and r.score is not None]


def _best_cell(cells: list[Cell], rows: list[TrialRow], basis: Basis) -> dict[str, Any] | None:
    scored = [c for c in cells if c.mean is not None]
    if not scored:
        return None
    best = max(scored, key=lambda c: c.mean)  # the first of equal means
    tied = [c.label for c in scored if c is not best and best.se is not None and c.se is not None
            and tied_within_noise(best.mean, best.se, c.mean, c.se)]
    sides = [(c.label, [r for r in rows if r.cell == c.label]) for c in [best] + [c for c in scored if c is not best]]
    return {"label": best.label, "n_emb": best.n_emb, "n_layer": best.n_layer, "n": best.n,
            "mean": best.mean, "se": best.se, "best": best.high, "tied_with": tied,
            "basis": with_basis("", basis, reach_words(sides, "the settings") if len(sides) > 1 else None).lstrip("; ")}


def selection_words(rows: list[TrialRow]) -> str | None:
    """Whether ranking by max and by the selection-seed score pick the same best trial."""
    both = [r for r in rows if r.selection is not None and r.best_score is not None]
    if len(both) < 2:
        return None
    by_max = sorted(both, key=lambda r: -r.best_score)
    by_fresh = sorted(both, key=lambda r: -r.selection)
    swapped = sum(1 for i, a in enumerate(by_max) for b in by_max[i + 1:] if b.selection > a.selection)
    pairs = len(both) * (len(both) - 1) // 2
    if by_max[0] is by_fresh[0]:
        tail = "and order every pair alike" if not swapped else f"but order {swapped} of {pairs} pair(s) differently"
        return (f"max and selection-seed rankings agree on the best of the {len(both)} trials scored on "
                f"selection seeds ({by_max[0].id}) {tail}")
    a, b = by_max[0], by_fresh[0]
    noise = ""
    if a.selection_se is not None and b.selection_se is not None:
        tie = tied_within_noise(a.selection, a.selection_se, b.selection, b.selection_se, Z95)
        noise = "; the selection-seed gap is within noise" if tie else "; the selection-seed gap is beyond noise"
    return (f"max and selection-seed rankings disagree: best by max is {a.id} (selection {pm(a.selection, a.selection_se)}), "
            f"best on selection seeds is {b.id} (selection {pm(b.selection, b.selection_se)}){noise}; "
            f"{swapped} of {pairs} pair(s) ordered differently")


def holdout_words(rows: list[TrialRow]) -> str | None:
    """How many runs and checkpoints of the compared set were looked at on the holdout. One
    look of one run chosen before it is a claim; the best of several looks is chosen by them."""
    looked = [r for r in rows if r.holdout_looks and not r.is_ensemble]
    if not looked:
        return None
    looks = sum(r.holdout_looks for r in looked)
    checkpoints = sum(r.holdout_checkpoints for r in looked)
    if len(looked) == 1 and looks == 1:
        return (f"holdout: one look, at {looked[0].id}: a claim for that run if it was chosen "
                f"before the look (on the selection seeds)")
    top = max(looked, key=lambda r: r.holdout)
    return (f"holdout: {len(looked)} run(s), {checkpoints} checkpoint(s), {looks} look(s) in all; the best "
            f"of them on the holdout ({top.id}, {pm(top.holdout, top.holdout_se)}) is a selection "
            f"again, optimistic like a max: claim the run chosen on the selection seeds, not the "
            f"holdout's best")




def compute_trends(cells: list[Cell], rows: list[TrialRow], ranking: Ranking, terms: Terms = IMF) -> Trends:
    """Mean score (the ranking's, set by ``score_rows``) by n_emb, by n_layer and by every other
    numeric setting that varies between cells; the best cell; the width, depth and other
    settings' effects, worded in ``terms`` (a program's metric as written, or imf's score)."""
    basis, noun = basis_of(rows), terms.noun(ranking.noun)
    trends = Trends(by_n_emb=groups_by(cells, rows, lambda c: c.n_emb),
                    by_n_layer=groups_by(cells, rows, lambda c: c.n_layer),
                    cells=cells, best_cell=_best_cell(cells, rows, basis), selection=selection_words(rows),
                    holdout=holdout_words(rows), basis=basis.to_dict(),
                    axes=axis_trends(cells, rows, basis, noun, terms))
    trends.width = _effect(trends.by_n_emb, "width", "n_emb", rows, basis, noun, terms.sign)
    trends.depth = _effect(trends.by_n_layer, "depth", "n_layer", rows, basis, noun, terms.sign)
    return trends
