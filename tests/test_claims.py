"""benchmarks/claims/claims.py: the numbers of README, docs/ and RESULTS are written from the committed JSON, and a
number edited by hand or a run removed from the JSON fails the check."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "claims"))

import claims  # noqa: E402


def test_the_committed_readme_and_results_agree_with_the_json():
    assert claims.run(ROOT, check=True) == []


@pytest.fixture
def checkout(tmp_path):
    """A copy of what claims.py reads and writes."""
    (tmp_path / "benchmarks").mkdir()
    shutil.copytree(ROOT / "benchmarks" / "learning_results", tmp_path / "benchmarks" / "learning_results")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("*.png", "report_example"))
    for curves in (ROOT / "docs").glob("learning_curves*.png"):  # the records' curves a passage names
        shutil.copy(curves, tmp_path / "docs" / curves.name)
    for name in ("RESULTS.md", "RUNS.md"):
        shutil.copy(ROOT / "benchmarks" / name, tmp_path / "benchmarks" / name)
    for path in (ROOT / "benchmarks").glob("*.json"):  # what published numbers trace to
        shutil.copy(path, tmp_path / "benchmarks" / path.name)
    shutil.copytree(ROOT / "imf" / "configs", tmp_path / "imf" / "configs")  # the presets the passages name
    return tmp_path


def _first_claimed_number(text: str) -> str:
    start = text.index("<!-- claims:learning -->")
    return next(word for word in text[start:].split() if word.startswith("0.") and word[2:5].isdigit())


def test_a_number_edited_by_hand_fails_the_check(checkout):
    readme = checkout / "docs" / "learning.md"
    text = readme.read_text()
    number = _first_claimed_number(text)
    edited = number[:-1] + ("1" if number[-1] != "1" else "2")
    start = text.index("<!-- claims:learning -->")
    readme.write_text(text[:start] + text[start:].replace(number, edited, 1))
    problems = claims.run(checkout, check=True)
    assert len(problems) == 1 and "docs/learning.md, passage learning" in problems[0]
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
    assert any(p.startswith("docs/learning.md, passage learning: ") for p in problems), problems
    assert any("passage results-learning-keypoints" in p for p in problems), problems


def test_a_shipped_record_without_its_curves_fails_the_check(checkout):
    """The paragraph on how the shipped presets' records were made names their curves: a record
    shipped without them (learning.py --collect not run, or its figure not committed) is named."""
    from claims_presets import SHIPPED
    curves = checkout / "docs" / f"learning_curves_{SHIPPED['pusht_image_cpu']}.png"
    curves.unlink()
    problems = claims.run(checkout, check=True)
    assert any(p.startswith("results-presets-made-by: ") and str(curves) in p for p in problems), problems


def test_missing_markers_are_named(checkout):
    readme = checkout / "README.md"
    readme.write_text(readme.read_text().replace("<!-- /claims:readme-attention -->", ""))
    learning = checkout / "docs" / "learning.md"
    learning.write_text(learning.read_text().replace("<!-- claims:learning -->\n", ""))
    problems = claims.run(checkout, check=True)
    assert any("the markers of passage 'readme-attention' are missing" in p for p in problems), problems
    assert any("the markers of passage 'learning' are missing (<!-- claims:learning --> ... "
               "<!-- /claims:learning -->: in none of README.md, docs/*.md, benchmarks/RESULTS.md, benchmarks/RUNS.md)" in p
               for p in problems), problems


def test_a_passage_moved_to_another_published_file_is_found_there(checkout):
    """A passage may move between README, docs/ and RESULTS: its markers say where it is."""
    readme, moved = checkout / "README.md", checkout / "docs" / "moved.md"
    text = readme.read_text()
    start = text.index("<!-- claims:readme-main-job -->")
    stop = text.index("<!-- /claims:readme-main-job -->") + len("<!-- /claims:readme-main-job -->")
    readme.write_text(text[:start] + text[stop:])
    moved.write_text("# Moved\n\n" + text[start:stop] + "\n")
    assert claims.run(checkout, check=True) == []
    moved.write_text(moved.read_text().replace("0.076", "0.067"))
    problems = claims.run(checkout, check=True)
    assert len(problems) == 1 and problems[0].startswith("docs/moved.md, passage readme-main-job: "), problems
    readme.write_text(text)  # the same passage in two files is refused: which one is the published one?
    problems = claims.run(checkout, check=True)
    assert any("'readme-main-job' appear in more than one file (" in p and "README.md" in p for p in problems), problems


@pytest.mark.slow
def test_the_command_exits_non_zero_on_a_difference(checkout):
    import subprocess
    ok = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "claims" / "claims.py"), "--check", "--root", str(checkout)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    readme = checkout / "docs" / "learning.md"
    number = _first_claimed_number(readme.read_text())
    readme.write_text(readme.read_text().replace(number, "0.999", 1))
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "claims" / "claims.py"), "--check", "--root", str(checkout)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.startswith("claims.py: docs/learning.md, passage learning")


def test_what_the_holdout_had_shown_before_a_choice_is_written_from_the_ledger(checkout):
    """The sentence on the presets' choices counts the ledger's looks: a look taken out of the ledger
    changes it, so the committed text no longer agrees."""
    ledger_path = checkout / "benchmarks" / "learning_results" / "holdout_ledger.json"
    ledger = json.loads(ledger_path.read_text())
    text = " ".join((checkout / "docs" / "learning.md").read_text().split())
    before = re.search(r"`pusht_image_cpu`'s last change \(\w+, [\d-]+\) was committed after (\d+) holdout looks", text)
    assert before, "the sentence on the image preset's last change is missing"
    looks = int(before.group(1))  # the committed ledger's count, whatever later choices made it
    snapshots = [e for e in ledger["looks"] if e["run"].startswith("image/imf/") and e["checkpoint"] != "best.pt"]
    ledger["looks"] = [e for e in ledger["looks"] if e not in snapshots[:1]]
    ledger_path.write_text(json.dumps(ledger))
    problems = claims.run(checkout, check=True)
    assert any(p.startswith("docs/learning.md, passage learning: ") for p in problems), problems
    claims.run(checkout, check=False)
    assert f"was committed after {looks - 1} holdout looks" in " ".join((checkout / "docs" / "learning.md").read_text().split())


def test_samples_to_a_success_rate_are_read_off_the_test_curves():
    from claims_samples import samples_to_success_on_test_curves

    def run(seed, successes):  # curve points: [minutes, samples, score, success]
        return {"seed": seed, "curve": [[i, (i + 1) * 250_000, 0.5, s] for i, s in enumerate(successes)]}

    early = samples_to_success_on_test_curves([run(42, [0.2, 0.6, 0.7]), run(43, [0.1, 0.5, 0.6, 0.9])], 0.60, 1e6)
    assert "seed 42: 0.50M (held at every later point)" in early
    assert "seed 43: 0.75M" in early and early.endswith(": met.")
    late = samples_to_success_on_test_curves([run(42, [0.2, 0.6, 0.4]), run(43, [0.1, 0.2, 0.3, 0.5, 0.6])], 0.60, 1e6)
    assert "below it again at 1 of the 1 later points" in late
    assert "seed 43: 1.25M" in late and late.endswith(": not met.")
    never = samples_to_success_on_test_curves([run(42, [0.1, 0.2])], 0.60, 1e6)
    assert "seed 42: not reached in 0.50M" in never and never.endswith(": not met.")
