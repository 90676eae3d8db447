"""Trends along one setting: cells grouped by its value, and the effect from its smallest to its
largest value, claimed only beyond the noise. Width (n_emb) and depth (n_layer) are two such
axes; every other config key whose numeric value varies between cells (data.demo_episodes,
training.lr) is one too."""
from __future__ import annotations

import math
from typing import Any, Callable

from imf.report.basis import Basis, reach_words, reached, with_basis
from imf.report.metric_terms import IMF, Terms
from imf.report.model import AxisTrend, Cell, Group, TrialRow
from imf.stats import clear_difference, signed


def combined_se(ses: list[float | None]) -> float | None:
    """SE of the mean of independent estimates; None when one of them is unknown."""
    if not ses or any(se is None for se in ses):
        return None
    return math.sqrt(sum(se * se for se in ses)) / len(ses)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def shown(value: int | float) -> str:
    """2000 -> "2000", 0.0003 -> "0.0003", 1e-05 -> "1e-05"."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def groups_by(cells: list[Cell], rows: list[TrialRow], value_of: Callable[[Cell], Any]) -> list[Group]:
    """The scored cells by their value of one setting, smallest first."""
    by_value: dict[int | float, list[Cell]] = {}
    for cell in cells:
        value = value_of(cell)
        if is_number(value) and cell.mean is not None:
            by_value.setdefault(value, []).append(cell)
    result = []
    for value in sorted(by_value):
        members = by_value[value]
        trials = [r for r in rows if r.cell in {c.label for c in members} and r.score is not None]
        top = max(trials, key=lambda r: r.score)
        steps, samples = reached(trials)
        result.append(Group(value, len(trials), sum(c.mean for c in members) / len(members),
                            top.score, top.id, len(members), combined_se([c.se for c in members]),
                            best_se=top.score_se, steps=steps, samples=samples))
    return result


def effect_words(delta: float, se: float | None, better: str, worse: str, none: str, sign: int = 1) -> str:
    """"helps +0.05 ± 0.01" when the effect is beyond the noise, else why no claim is made; the
    difference of scores ``delta`` is shown times ``sign`` (-1: a goal-minimize metric as written)."""
    shown = sign * delta
    if se is None:
        return f"{none}: {shown:+.4f}, noise unknown (no per-episode scores and one seed), no claim"
    if clear_difference(delta, se, 0.0, 0.0):
        return f"{better if delta > 0 else worse}: {signed(shown, se)}"
    return f"{none}: no clear effect ({signed(shown, se)})"


def effect_of(groups: list[Group], kind: str, key: str, basis: Basis,
              rows_at: Callable[[int | float], list[TrialRow]], more: tuple[str, str, str],
              noun: str = "score", sign: int = 1) -> dict[str, Any] | None:
    """How the mean score moves from the smallest to the largest ``key``; ``more``: the words
    for better, worse, and what the steps would compare besides the setting; ``noun``: what
    the mean is of (the report's ranking: "score" for the max, "selection score"); ``sign``: -1
    shows the difference as a goal-minimize metric's."""
    if not groups:
        return None
    low, high = groups[0], groups[-1]
    if low is high:
        return {"delta": None, "se": None, "clear": False, "low": low.value, "high": high.value,
                "text": f"{kind}: only {key} {shown(low.value)} was run, no trend"}
    delta = high.mean - low.mean
    se = math.hypot(high.se, low.se) if high.se is not None and low.se is not None else None
    clear = se is not None and clear_difference(delta, se, 0.0, 0.0)
    better, worse, what = more
    words = effect_words(delta, se, better, worse, kind, sign)
    sides = [(f"{key} {shown(g.value)}", rows_at(g.value)) for g in (high, low)]
    text = with_basis(f"{words}; mean {noun} at {key} {shown(high.value)} minus {key} {shown(low.value)}",
                      basis, reach_words(sides, what))
    return {"delta": delta, "se": se, "clear": clear, "low": low.value, "high": high.value, "text": text}


def axis_keys(cells: list[Cell]) -> list[str]:
    """Keys of the cells' settings with two or more numeric values (booleans are no axis)."""
    keys = sorted({k for c in cells for k in c.params})
    return [k for k in keys if len({c.params.get(k) for c in cells if is_number(c.params.get(k))}) > 1]


def axis_trends(cells: list[Cell], rows: list[TrialRow], basis: Basis, noun: str = "score",
                terms: Terms = IMF) -> list[AxisTrend]:
    """One trend per varying numeric setting, e.g. "data.demo_episodes: more helps: +0.05 ± 0.01"."""
    trends = []
    for key in axis_keys(cells):
        def rows_at(value: int | float, key: str = key) -> list[TrialRow]:
            labels = {c.label for c in cells if is_number(c.params.get(key)) and c.params[key] == value}
            return [r for r in rows if r.cell in labels and r.score is not None]
        groups = groups_by(cells, rows, lambda c, key=key: c.params.get(key))
        name = terms.key(key)  # as the text shows it
        more = (f"{name}: more helps", f"{name}: more hurts", name)
        trends.append(AxisTrend(key, groups, effect_of(groups, name, name, basis, rows_at, more, noun, terms.sign)))
    return trends
