"""imf.stats against numbers worked out by hand."""
from __future__ import annotations

import math

import pytest

from imf.stats import (clear_difference, difference_se, mean_sd, standard_error,
                       tied_within_noise)


def test_mean_sd_by_hand():
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32, sample variance 32/7
    mean, sd = mean_sd([2, 4, 4, 4, 5, 5, 7, 9])
    assert mean == 5.0 and sd == pytest.approx(math.sqrt(32 / 7))
    assert mean_sd([0.3]) == (0.3, 0.0)


def test_standard_error_by_hand():
    # 0, 1: mean 0.5, sample variance 0.5, sd 0.7071, se = 0.7071 / sqrt(2) = 0.5
    assert standard_error([0.0, 1.0]) == pytest.approx(0.5)
    # 1, 2, 3: sample sd 1, se = 1 / sqrt(3)
    assert standard_error([1, 2, 3]) == pytest.approx(1 / math.sqrt(3))
    assert standard_error([0.7]) == 0.0 and standard_error([]) == 0.0


def test_bad_values_raise():
    with pytest.raises(ValueError, match="at least one value"):
        mean_sd([])
    with pytest.raises(ValueError, match="finite"):
        standard_error([0.1, float("nan")])


def test_clear_difference_and_ties():
    # se of the difference: hypot(0.03, 0.04) = 0.05; 1.96 * 0.05 = 0.098
    assert difference_se(0.03, 0.04) == pytest.approx(0.05)
    assert clear_difference(0.80, 0.03, 0.70, 0.04)           # gap 0.10 > 0.098
    assert not clear_difference(0.80, 0.03, 0.71, 0.04)       # gap 0.09 < 0.098
    assert tied_within_noise(0.80, 0.03, 0.71, 0.04)
    assert clear_difference(0.80, 0.03, 0.71, 0.04, z=1.0)    # 0.09 > 0.05
    assert clear_difference(0.5, 0.0, 0.4, 0.0) and tied_within_noise(0.5, 0.0, 0.5, 0.0)


