"""A trainer program's metric in its own terms (issue 44): imf ranks every trial by one
higher-is-better score, a goal-minimize metric negated (docs/trainers.md), and keeps that score in
report.json, report.csv and the scoreboard. A report whose scored trials are all a program's, with
one metric, prints that metric as the program wrote it (val_mse 0.0109, lowest first); imf's own
trials, a mixed report or trials of different metrics print imf's score (``IMF``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from imf.report.model import TrialRow


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


def report_terms(ranked_by: dict[str, Any]) -> Terms:
    """The terms a built report was ranked in (``Terms.to_dict`` in its ranked_by)."""
    return Terms(ranked_by["metric"], ranked_by["goal"]) if ranked_by.get("metric") else IMF


def imf_label(ranked_by: dict[str, Any]) -> str:
    """imf's score of the metric: "-val_mse" for goal minimize."""
    return ("-" if ranked_by.get("goal") == "minimize" else "") + str(ranked_by.get("metric"))
