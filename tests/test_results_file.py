"""benchmarks/common/results_file.py: a benchmark replaces its own section in whichever of RESULTS.md and
RUNS.md holds it, appends a new one to RESULTS.md, and leaves the `# ` group headings alone."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "common"))

import results_file  # noqa: E402

RUNS = """# Every run

# Speed

## Policy (benchmarks/speed/policy_speed.py)

old policy table

## Trial (benchmarks/speed/trial_speed.py)

trial table

# Halving

## Successive halving (benchmarks/learning/halving.py)

old halving
"""
RESULTS = """# Results, by question

## Sweep (benchmarks/speed/sweep_overhead.py)

old sweep
"""


def _files(tmp_path, monkeypatch):
    results, runs = tmp_path / "RESULTS.md", tmp_path / "RUNS.md"
    results.write_text(RESULTS)
    runs.write_text(RUNS)
    monkeypatch.setattr(results_file, "RESULTS", results)
    monkeypatch.setattr(results_file, "RUNS", runs)
    return results, runs


def test_a_section_in_runs_is_replaced_there_up_to_the_next_group_heading(tmp_path, monkeypatch):
    results, runs = _files(tmp_path, monkeypatch)
    results_file.write_section("## Trial (benchmarks/speed/trial_speed.py)", ["## Trial (benchmarks/speed/trial_speed.py)", "", "new"],
                               results_file.RESULTS)
    assert results.read_text() == RESULTS
    assert runs.read_text() == RUNS.replace("trial table\n", "new\n")
    results_file.write_section("## Successive halving (benchmarks/learning/halving.py)", "new halving\n", results_file.RESULTS)
    assert runs.read_text().endswith("# Halving\n\n## Successive halving (benchmarks/learning/halving.py)\n\nnew halving\n")


def test_a_section_in_results_stays_there_and_a_new_one_is_appended_to_results(tmp_path, monkeypatch):
    results, runs = _files(tmp_path, monkeypatch)
    results_file.write_section("## Sweep (benchmarks/speed/sweep_overhead.py)", "new sweep\n", results_file.RESULTS)
    results_file.write_section("## The test suite", "## The test suite\n\nminutes\n", results_file.RESULTS)
    assert results.read_text() == RESULTS.replace("old sweep", "new sweep") + "\n## The test suite\n\nminutes\n"
    assert runs.read_text() == RUNS


def test_a_heading_inside_a_line_is_not_a_section(tmp_path, monkeypatch):
    results, runs = _files(tmp_path, monkeypatch)
    runs.write_text(RUNS.replace("trial table", "see ## Policy (benchmarks/speed/policy_speed.py)\nfor the policy"))
    before = runs.read_text()
    results_file.write_section("## Policy (benchmarks/speed/policy_speed.py)", "new policy\n", results_file.RESULTS)
    assert runs.read_text() == before.replace("old policy table", "new policy")
