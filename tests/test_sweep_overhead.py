"""benchmarks/speed/sweep_overhead.py: the planning timing runs in a fresh interpreter of its own."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "speed"))

import sweep_overhead  # noqa: E402


@pytest.mark.slow
def test_planning_a_hundred_trials_is_timed_in_its_own_interpreter(tmp_path):
    """The interpreter's script imports what it plans with: a regrouping of benchmarks/ once dropped
    that import, and the benchmark died at its first step."""
    timed = sweep_overhead.plan_seconds(tmp_path, 100)
    assert timed["n"] == 100 and timed["total"] >= timed["plan"] > 0 and timed["ms_per_trial"] > 0
    assert (tmp_path / "plan100" / "plan" / "sweep.json").is_file()  # the sweep named "plan"
