"""Small statistics for reports and suggestions: standard errors, spreads, noise-aware comparisons.

Plain Python (no numpy), so anything may import it. Conventions:
- standard deviations are sample ones (n - 1 in the denominator);
- with fewer than two values there is no estimate of spread: ``standard_error`` and the sd of
  ``mean_sd`` are 0.0 then, and callers that need to know whether the noise was *measured*
  look at the number of values (a 0.0 from one value is "unknown", not "exact");
- two scores differ clearly when their gap exceeds ``z`` standard errors of the difference,
  ``z * sqrt(se_a**2 + se_b**2)`` (z = 1.96: a 95% interval for the difference excludes 0).

A number and its standard error print one way everywhere: ``pm`` ("0.8000 ± 0.0200") and
``signed`` ("+0.0500 ± 0.0100"), both through ``se_text``; ``mark`` "+-" where a line stays ASCII.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

Z95 = 1.96
PM = "±"  # one standard error either side


def _finite(values: Iterable[float]) -> list[float]:
    numbers = [float(v) for v in values]
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"values must be finite numbers, got {numbers}")
    return numbers


def mean_sd(values: Iterable[float]) -> tuple[float, float]:
    """(mean, sample standard deviation); the sd is 0.0 for one value. Empty: ValueError."""
    numbers = _finite(values)
    if not numbers:
        raise ValueError("mean_sd needs at least one value")
    mean = math.fsum(numbers) / len(numbers)
    if len(numbers) < 2:
        return mean, 0.0
    variance = math.fsum((v - mean) ** 2 for v in numbers) / (len(numbers) - 1)
    return mean, math.sqrt(variance)


def standard_error(values: Iterable[float]) -> float:
    """Standard error of the mean: sample sd / sqrt(n); 0.0 for n < 2 (no estimate)."""
    numbers = _finite(values)
    if len(numbers) < 2:
        return 0.0
    return mean_sd(numbers)[1] / math.sqrt(len(numbers))


def difference_se(se_a: float, se_b: float) -> float:
    """Standard error of a - b for independent a and b."""
    return math.hypot(se_a, se_b)


def clear_difference(a: float, se_a: float, b: float, se_b: float, z: float = Z95) -> bool:
    """True when |a - b| is larger than ``z`` standard errors of the difference."""
    return abs(a - b) > z * difference_se(se_a, se_b)


def tied_within_noise(a: float, se_a: float, b: float, se_b: float, z: float = Z95) -> bool:
    """True when a and b are not clearly different (see ``clear_difference``)."""
    return not clear_difference(a, se_a, b, se_b, z)


def fmt(value: Any, digits: int = 4) -> str:
    """A float to ``digits`` decimals, anything else as it is, None as "-"."""
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def se_text(se: float | None, digits: int = 4, mark: str = PM) -> str:
    """" ± 0.0200" after a number; nothing when its SE is unknown."""
    return "" if se is None else f" {mark} {se:.{digits}f}"


def pm(value: float | None, se: float | None, digits: int = 4, mark: str = PM) -> str:
    """"0.8000 ± 0.0200", or the value alone when its SE is unknown ("-" for no value)."""
    if value is None:
        return "-"
    return fmt(value, digits) if se is None else f"{value:.{digits}f}{se_text(se, digits, mark)}"


def signed(value: float | None, se: float | None, digits: int = 4) -> str:
    """A difference: "+0.0500 ± 0.0100", or the signed value alone when its SE is unknown."""
    if value is None:
        return "-"
    return f"{value:+.{digits}f}{se_text(se, digits)}"
