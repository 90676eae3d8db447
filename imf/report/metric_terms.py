"""A trainer program's metric in its own terms (issue 44): imf ranks every trial by one
higher-is-better score, a goal-minimize metric negated (docs/trainers.md), and keeps that score in
report.json, report.csv and the scoreboard. A report whose scored trials are all a program's, with
one metric, prints that metric as the program wrote it (val_mse 0.0109, lowest first); imf's own
trials, a mixed report or trials of different metrics print imf's score (``IMF``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from imf.report.model import TrialRow
from imf.stats import pm, se_text


@dataclass(frozen=True)
class Terms:
    name: str | None = None  # the program's metric; None: imf's score
    goal: str = "maximize"

    @property
    def program(self) -> bool:
        return self.name is not None

    @property
    def sign(self) -> int:
        """imf's score times this is the metric (and a difference of scores, the metric's)."""
        return -1 if self.goal == "minimize" else 1

    def value(self, score: float | None) -> float | None:
        return None if score is None else self.sign * score

    def spread(self, low: float | None, high: float | None) -> str:
        """"0.0109..0.0119": the metric's min..max (a minus sign is not a dash)."""
        if low is None:
            return "-"
        a, b = sorted((self.value(low), self.value(high)))
        return f"{a:.4f}..{b:.4f}"

    def key(self, key: str) -> str:
        """A setting as a program's grid names it: params.optim.lr -> optim.lr."""
        return key.removeprefix("params.") if self.program else key

    @property
    def direction(self) -> str:
        return "lower is better" if self.goal == "minimize" else "higher is better"

    def noun(self, noun: str) -> str:
        """What a trend's mean is of: a Ranking's noun ("score", "last-3 score") in the metric's name."""
        return noun.removesuffix("score") + self.name if self.program else noun

    def mean_of(self) -> str:
        return f"mean {self.name} " if self.program else "mean "

    def score_name(self, ranked_by: dict[str, str]) -> str:
        """What ranks the trials: "val_mse", "last-3 mean of val_mse", "selection val_mse"."""
        by = ranked_by.get("by")
        if by == "last-k":
            return f"{ranked_by['short']} mean of {self.name}"
        return f"selection {self.name}" if by == "selection" else str(self.name)

    def ranked_text(self, ranked_by: dict[str, str]) -> str:
        first = "lowest" if self.goal == "minimize" else "highest"
        return f"ranked by {self.score_name(ranked_by)}, {first} first"

    def legend(self, label: str, selection: bool, noise_rule: str) -> list[str]:
        """report.md's legend for a program's trials: only what they have."""
        lines = [f"- **{self.name}** ({self.direction}): the trainer's metric (goal {self.goal}) as the "
                 f"program wrote it, read back from its metric source; summary.json keeps it under `metric`. "
                 f"report.json, report.csv, the scoreboard, suggest and imf loop rank by imf's "
                 f"higher-is-better score, {label}, in the same order"]
        if selection:
            lines.append(f"- **selection**: the eval's {self.name} of the run's checkpoint "
                         "(final_eval.json, `--final-eval`)")
        return lines + [f"- {noise_rule}"]

    def pm(self, score: float | None, se: float | None, digits: int = 4) -> str:
        """imf's score ± SE as today, or the metric as written with its name: "val_mse 0.0114 ± 0.0005"."""
        return f"{self.name} {pm(self.value(score), se, digits)}" if self.program else pm(score, se, digits)

    def within(self, low: float, high: float, digits: int = 3) -> str:
        """A range of scores: "within 0.5..0.7", or "val_mse within 0.010..0.012"."""
        if not self.program:
            return f"within {low:.{digits}f}..{high:.{digits}f}"
        a, b = sorted((self.value(low), self.value(high)))
        return f"{self.name} within {a:.{digits}f}..{b:.{digits}f}"

    def gap(self, diff: float, se: float | None, digits: int = 3, named: bool = True) -> str:
        """A difference of scores: "+0.050 ± 0.010"; a program's metric as written, its way in words:
        "val_mse 0.001 ± 0.000 lower" ("0.001 ± 0.000 lower" unnamed)."""
        noise = se_text(se, digits)
        if not self.program:
            return f"{diff:+.{digits}f}{noise}"
        change = self.sign * diff
        way = "lower" if change < 0 else "higher" if change > 0 else "the same"
        return ((f"{self.name} " if named else "") + f"{abs(change):.{digits}f}{noise} {way}")

    @property
    def what(self) -> str:
        """What a run is judged by: "score", or the metric's name."""
        return self.name if self.program else "score"

    @property
    def better(self) -> str:
        """The way a gain goes: "higher", or "lower" for a goal-minimize metric."""
        return "lower" if self.program and self.goal == "minimize" else "higher"

    def to_dict(self) -> dict[str, str]:
        """Into the report's ranked_by: nothing for imf's score, so imf's reports keep theirs."""
        return {"metric": self.name, "goal": self.goal} if self.program else {}


IMF = Terms()


def terms_of(rows: Iterable[TrialRow]) -> Terms:
    """The program's metric where every scored trial has the same one, else imf's score."""
    scored = [r for r in rows if not r.is_ensemble and (r.best_score is not None or r.selection is not None)]
    labels = {r.metric for r in scored}
    if len(labels) != 1 or None in labels:
        return IMF
    label = labels.pop()
    return Terms(label[1:], "minimize") if label.startswith("-") else Terms(label, "maximize")


def summary_terms(metric: Any) -> Terms:
    """A run's summary.json ``metric`` (a trainer program's name and goal) as terms; IMF without one."""
    if not isinstance(metric, dict) or metric.get("goal") not in ("minimize", "maximize") or not metric.get("name"):
        return IMF
    return Terms(str(metric["name"]), metric["goal"])


def report_terms(ranked_by: dict[str, Any]) -> Terms:
    """The terms a built report was ranked in (``Terms.to_dict`` in its ranked_by)."""
    return Terms(ranked_by["metric"], ranked_by["goal"]) if ranked_by.get("metric") else IMF


def imf_label(ranked_by: dict[str, Any]) -> str:
    """imf's score of the metric: "-val_mse" for goal minimize."""
    return ("-" if ranked_by.get("goal") == "minimize" else "") + str(ranked_by.get("metric"))
