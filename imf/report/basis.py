"""What a comparison was equal in (training time, epochs or steps, and what each side reached),
and which score ranked it (``Ranking``: max, last-k or the selection seeds).

Under a time budget a wider model makes fewer steps in the same minutes, so a gap between
cells measures throughput as much as the setting; at equal epochs it means something else. Every
trend, gap and best-cell line carries the basis, and says so in words when the compared sides'
optimizer steps (or samples) differ by more than ``REACH_TOLERANCE``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from imf.errors import ReportError
from imf.report.model import METRIC, TrialRow

REACH_TOLERANCE = 0.10  # steps or samples differing by more than this share are said aloud
X_AXES = ("epoch", "steps", "samples", "minutes")
RANK_BY = ("max", "last-k", "selection")


@dataclass(frozen=True)
class Basis:
    kind: str  # "time", "epochs", "steps" (equal epochs and steps), "mixed", "unknown"
    text: str  # "at equal training time (7.0 min, wall clock)"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


@dataclass(frozen=True)
class Ranking:
    """The score that ranks the trials, and that the cells, the trends and the best cell average."""
    by: str  # one of RANK_BY
    text: str  # "ranked by selection score (200 selection episodes)": the report's header says it
    name: str  # "selection score": what a cell's mean is a mean of
    short: str  # "selection", "max", "last-3": the cells table's word for it

    def score(self, row: TrialRow) -> tuple[float | None, float | None]:
        """(score, SE) of ``row`` on this basis."""
        if self.by == "selection":
            return row.selection, row.selection_se
        if self.by == "last-k":
            return row.last_k, row.last_k_se
        return row.best_score, row.best_se

    @property
    def noun(self) -> str:
        """What a trend's mean is of: "score" (the max, the headline), "selection score"."""
        return "score" if self.by == "max" else f"{self.short} score"

    def to_dict(self) -> dict[str, str]:
        return {"by": self.by, "text": self.text, "name": self.name, "short": self.short}


def check_rank_by(rank_by: str | None) -> None:
    if rank_by is not None and rank_by not in RANK_BY:
        raise ReportError(f"--rank-by {rank_by!r}: expected max, last-k or selection")


def ranking_of(rows: Iterable[TrialRow], rank_by: str | None, last_k: int) -> Ranking:
    """``rank_by`` (None: the selection score where every scored trial has one, else max), in
    words; a bad value, or selection where no trial has a selection score, is a ReportError."""
    check_rank_by(rank_by)
    scored = [r for r in rows if not r.is_ensemble and (r.best_score is not None or r.selection is not None)]
    chosen = [r for r in scored if r.selection is not None]
    labels = {r.metric for r in scored}  # a trainer's metric, when every scored trial has the same one
    metric = labels.pop() if len(labels) == 1 and None not in labels else METRIC
    if rank_by == "last-k":
        name = f"last-{last_k} mean of {metric}"
        return Ranking("last-k", f"ranked by {name}", name, f"last-{last_k}")
    if rank_by == "selection" or (rank_by is None and chosen and len(chosen) == len(scored)):
        if not chosen:
            raise ReportError("--rank-by selection: no trial has a selection score (final_eval.json, "
                              "written by imf trial/sweep --final-eval N)")
        missing = len(scored) - len(chosen)
        left = f"; {missing} trial(s) without one not ranked" if missing else ""
        return Ranking("selection", f"ranked by selection score{_episodes(chosen)}{left}",
                       "selection score", "selection")
    name = f"max {metric}"
    why = (f" ({len(chosen)} of {len(scored)} scored trials have a selection score; --rank-by selection "
           "ranks those)" if rank_by is None and chosen else "")
    return Ranking("max", f"ranked by {name}{why}", name, "max")


def _episodes(rows: list[TrialRow]) -> str:
    """" (200 selection episodes)", " (50 to 200 selection episodes)", or "" when unknown."""
    counts = sorted({r.selection_episodes for r in rows if r.selection_episodes})
    if not counts:
        return ""
    return f" ({counts[0]}{f' to {counts[-1]}' if len(counts) > 1 else ''} selection episodes)"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def basis_of(rows: Iterable[TrialRow]) -> Basis:
    """The budget every trial of ``rows`` shared, in words."""
    rows = [r for r in rows if not r.is_ensemble and r.budget_kind]
    if not rows:
        return Basis("unknown", "budget unknown (no config with a budget)")
    kinds = {r.budget_kind for r in rows}
    if kinds == {"time"}:
        values = sorted({r.budget_value for r in rows})
        clocks = sorted({r.budget_clock or "wall" for r in rows})
        clock = f"{'/'.join(clocks)} clock"
        if len(values) == 1:
            return Basis("time", f"at equal training time ({_minutes(values[0])}, {clock})")
        return Basis("mixed", f"at unequal training time ({_minutes(values[0])} to {_minutes(values[-1])}, {clock})")
    if kinds == {"epochs"}:
        values = sorted({r.budget_value for r in rows})
        if len(values) == 1:
            return Basis("epochs", f"at equal epochs ({values[0]:g})")
        return Basis("mixed", f"at unequal epochs ({values[0]:g} to {values[-1]:g})")
    return Basis("mixed", "at unequal budgets (some trials by time, some by epochs)")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def reached(rows: Iterable[TrialRow]) -> tuple[float | None, float | None]:
    """Mean optimizer steps and mean training samples of ``rows`` (None when unknown)."""
    rows = list(rows)
    return (_mean([r.steps for r in rows if r.steps is not None]),
            _mean([r.samples for r in rows if r.samples is not None]))


def count(value: float) -> str:
    """4321 -> "4.3k", 1_250_000 -> "1.25M"."""
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.0f}"


def differ(values: list[float | None]) -> bool:
    known = [v for v in values if v is not None and v > 0]
    return len(known) >= 2 and max(known) > (1 + REACH_TOLERANCE) * min(known)


def reach_words(sides: list[tuple[str, Iterable[TrialRow]]], what: str) -> str | None:
    """"n_emb 128 made 4.3k steps, n_emb 64 9.0k; this compares throughput as much as width"
    when the sides' steps (or samples) differ by more than the tolerance; else None."""
    means = [(name, *reached(rows)) for name, rows in sides]
    if differ([m[1] for m in means]):
        unit, index = "steps", 1
    elif differ([m[2] for m in means]):
        unit, index = "training samples", 2
    else:
        return None
    shown = [(name, values[index - 1]) for name, *values in means if values[index - 1] is not None]
    first, *rest = shown
    listing = ", ".join([f"{first[0]} made {count(first[1])} {unit}"] + [f"{n} {count(v)}" for n, v in rest])
    return f"{listing}; this compares throughput as much as {what}"


def with_basis(text: str, basis: Basis, reach: str | None) -> str:
    """A trend, gap or best-cell line with its basis (and the reach, when the sides differ)."""
    if basis.kind == "unknown":
        return text + (f"; {reach}" if reach else "")
    return f"{text}; {basis.text}" + (f": {reach}" if reach else "")


def default_x(basis: Basis) -> str:
    """The curves' x-axis that matches the budget: minutes for a time budget, else steps."""
    return "minutes" if basis.kind == "time" else "steps"


def budget_fields(config: dict[str, Any] | None) -> tuple[str | None, float | None, str | None]:
    """(kind, value, clock) of a run's budget from its flattened config: a time budget when
    training.time_budget_s is set, else the epochs (imf's or Diffusion Policy's num_epochs)."""
    if not config:
        return None, None, None
    seconds = config.get("training.time_budget_s")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0:
        return "time", float(seconds), str(config.get("training.budget_clock") or "wall")
    epochs = config.get("training.num_epochs")
    if isinstance(epochs, int) and not isinstance(epochs, bool):
        return "epochs", float(epochs), None
    return None, None, None


def batch_size(config: dict[str, Any] | None) -> int | None:
    for key in ("training.batch_size", "dataloader.batch_size"):
        value = (config or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None
