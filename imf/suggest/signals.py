"""What a run's curves say beyond its score: it overfits (the more-data rule), it stalled early
(the curriculum rule).

A loss is logged once per epoch. Its noise is the spread of its epoch-to-epoch changes,
sd(changes) / sqrt(2): the changes take out a steady trend, which the spread of the values
themselves would count as noise. A mean of ``k`` epochs then has the SE sigma / sqrt(k), and
the difference of two such windows the SE sigma * sqrt(2 / k); a shift is clear when it is
larger than 1.96 of those.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from imf.report import Curve
from imf.stats import Z95, clear_difference, mean_sd, pm, signed
from imf.suggest.rules import RISING_K, window_mean, rising

K = 3  # epochs in each window of the loss tests
ROUNDING = 1e-9  # a steady series' float rounding: no change, however small its noise reads


@dataclass(frozen=True)
class Shift:
    """The mean of a series' last ``k`` epochs against its lowest earlier window of ``k``."""
    change: float  # last window - lowest window
    se: float
    low: tuple[int, int]  # first and last epoch of the lowest window
    last: tuple[int, int]

    @property
    def clear(self) -> bool:
        return beyond(self.change, self.se)

    def words(self, name: str, lowest: str = "lowest") -> str:
        return (f"{name} {signed(self.change, self.se)} from its {lowest} {K} epochs "
                f"({self.low[0]}-{self.low[1]}) to its last {K} ({self.last[0]}-{self.last[1]})")


def beyond(change: float, se: float) -> bool:
    """Is ``change`` positive by more than 1.96 of its SE?"""
    return change > max(Z95 * se, ROUNDING)


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def epoch_noise(values: list[float]) -> float:
    """The noise of one epoch's value: the spread of the epoch-to-epoch changes / sqrt(2)."""
    changes = [b - a for a, b in zip(values, values[1:])]
    return mean_sd(changes)[1] / math.sqrt(2) if len(changes) >= 2 else 0.0


def _se(values: list[float], k: int) -> float:
    return epoch_noise(values) * math.sqrt(2 / k)


def rise_from_low(points: list[tuple[int, float]], k: int = K) -> Shift | None:
    """(epoch, value) points: their last ``k`` against the window of ``k`` consecutive epochs
    with the lowest mean that ends before them; None with fewer than ``2 k`` points."""
    if len(points) < 2 * k:
        return None
    values = [v for _, v in points]
    start = min(range(len(values) - 2 * k + 1), key=lambda i: _mean(values[i:i + k]))
    change = _mean(values[-k:]) - _mean(values[start:start + k])
    return Shift(change, _se(values, k), (points[start][0], points[start + k - 1][0]),
                 (points[-k][0], points[-1][0]))


def _joined(curve: Curve, k: int) -> tuple[str, list[tuple[int, float, float]]]:
    """("mse" or "loss", (epoch, train, val) of the epochs that logged both): the mse when
    there are ``2 k`` epochs of it, since imf's adaptive-weighted loss is about 1 whatever the
    model does (docs/policy.md); flow and ddpm log a loss that is their mse."""
    for name in ("mse", "loss"):
        train = {int(e): v for e, v in getattr(curve, f"train_{name}")}
        rows = [(int(e), train[int(e)], v) for e, v in getattr(curve, f"val_{name}") if int(e) in train]
        if len(rows) >= 2 * k:
            break
    return name, rows


def _train_fall(rows: list[tuple[int, float, float]], low: tuple[int, int], k: int) -> tuple[float, float]:
    """How far train_loss fell from the epochs of ``low`` to the last ``k``, and its SE."""
    values = [t for _, t, _ in rows]
    earlier = [t for e, t, _ in rows if low[0] <= e <= low[1]]
    return _mean(earlier) - _mean(values[-k:]), _se(values, k)


def overfitting(curve: Curve | None, k: int = K) -> tuple[bool, str]:
    """Does the run overfit? Either its validation error rose clearly from its lowest window to
    its last ``k`` epochs while its training error clearly fell over the same epochs; or its
    test score is no longer rising (``rising``, with the rollouts that test needs) while the gap
    val - train widened clearly from its narrowest window to its last ``k`` epochs. The errors:
    the mse (``_joined``), else the loss."""
    name, rows = _joined(curve, k) if curve else ("loss", [])
    if len(rows) < 2 * k:
        return False, f"{len(rows)} epoch(s) with train and val {name}, fewer than the {2 * k} the test needs"
    val = rise_from_low([(e, v) for e, _, v in rows], k)
    fall, fall_se = _train_fall(rows, val.low, k)
    falls = f"train_{name} fell {pm(fall, fall_se)}"
    if val.clear and beyond(fall, fall_se):
        return True, f"{val.words(f'val_{name}')} while {falls}"
    gap = rise_from_low([(e, v - t) for e, t, v in rows], k)
    gap_words = gap.words(f"val_{name} - train_{name}", "narrowest")
    score_rising, score_words = rising(curve)
    enough = len([p for p in curve.rollouts if p[1] is not None]) >= 2 * RISING_K
    if gap.clear and enough and not score_rising:
        return True, f"its test score stopped rising ({score_words}) while {gap_words}"
    return False, f"{val.words(f'val_{name}')}, {falls}; {gap_words}"


def stalled(curve: Curve | None, k: int = RISING_K) -> tuple[bool, str]:
    """Did the run stall early? Nothing after the first third of its rollouts beat the best of
    that third beyond noise: the mean of its last ``k`` rollouts is not clearly above it. That
    holds for a score that peaked early and for one flat from the start."""
    points = [p for p in (curve.rollouts if curve else []) if p[1] is not None]
    if len(points) < 2 * k:
        return False, f"{len(points)} rollout(s), fewer than the {2 * k} the stall test needs"
    third = points[-1][0] / 3
    early = [p for p in points[:len(points) - k] if p[0] <= third] or points[:1]
    peak = max(early, key=lambda p: p[1])
    last, last_se = window_mean(points[-k:])
    peak_se = peak[2] if peak[2] is not None else last_se
    improved = last > peak[1] and clear_difference(last, last_se, peak[1], peak_se)
    words = (f"the mean of its last {k} rollouts {pm(last, last_se)} "
             f"{'is above' if improved else 'is not above'} the best of its first third of epochs "
             f"{pm(peak[1], peak_se)} (epoch {peak[0]}) beyond noise")
    return not improved, words
