"""benchmarks/claims.py: README's and RESULTS' numbers are written from the committed JSON, and a
number edited by hand or a run removed from the JSON fails the check."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import claims  # noqa: E402


def test_the_committed_readme_and_results_agree_with_the_json():
    assert claims.run(ROOT, check=True) == []


@pytest.fixture
def checkout(tmp_path):
    """A copy of what claims.py reads and writes."""
    (tmp_path / "benchmarks").mkdir()
    shutil.copytree(ROOT / "benchmarks" / "learning_results", tmp_path / "benchmarks" / "learning_results")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copy(ROOT / "benchmarks" / "RESULTS.md", tmp_path / "benchmarks" / "RESULTS.md")
    shutil.copytree(ROOT / "imf" / "configs", tmp_path / "imf" / "configs")  # the presets the passages name
    return tmp_path


def _first_claimed_number(text: str) -> str:
    start = text.index("<!-- claims:readme-learning -->")
    return next(word for word in text[start:].split() if word.startswith("0.") and word[2:5].isdigit())


def test_a_number_edited_by_hand_fails_the_check(checkout):
    readme = checkout / "README.md"
    text = readme.read_text()
    number = _first_claimed_number(text)
    edited = number[:-1] + ("1" if number[-1] != "1" else "2")
    start = text.index("<!-- claims:readme-learning -->")
    readme.write_text(text[:start] + text[start:].replace(number, edited, 1))
    problems = claims.run(checkout, check=True)
    assert len(problems) == 1 and "README.md, passage readme-learning" in problems[0]
    assert repr(edited.rstrip(",;.")) in problems[0] or edited in problems[0]
    claims.run(checkout, check=False)  # writing it again from the JSON repairs it
    assert readme.read_text() == text


def test_a_run_removed_from_the_json_fails_the_check(checkout):
    path = checkout / "benchmarks" / "learning_results" / "keypoints.json"
    runs = json.loads(path.read_text())
    kept = [r for r in runs if not (r["objective"] == "ddpm" and r["seed"] == 42)]
    assert len(kept) == len(runs) - 1
    path.write_text(json.dumps(kept))
    problems = claims.run(checkout, check=True)
    assert any(p.startswith("README.md, passage readme-learning: ") for p in problems), problems
    assert any("passage results-learning-keypoints" in p for p in problems), problems


def test_missing_markers_are_named(checkout):
    readme = checkout / "README.md"
    readme.write_text(readme.read_text().replace("<!-- /claims:readme-learning -->", ""))
    problems = claims.run(checkout, check=True)
    assert any("the markers of passage 'readme-learning' are missing" in p for p in problems)


@pytest.mark.slow
def test_the_command_exits_non_zero_on_a_difference(checkout):
    import subprocess
    ok = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "claims.py"), "--check", "--root", str(checkout)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    readme = checkout / "README.md"
    number = _first_claimed_number(readme.read_text())
    readme.write_text(readme.read_text().replace(number, "0.999", 1))
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "claims.py"), "--check", "--root", str(checkout)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.startswith("claims.py: README.md, passage readme-learning")
