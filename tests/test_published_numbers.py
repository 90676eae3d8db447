"""benchmarks/claims/published_numbers.py: every number in README.md, docs/*.md, benchmarks/RESULTS.md and RUNS.md,
tables and code included, is registered with what it is, and a number changed by hand fails the
check (the claims passages are claims.py's: tests/test_claims.py)."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "claims"))

import published_numbers as pn  # noqa: E402


def test_every_published_number_is_registered():
    assert pn.check(ROOT) == []


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("*.png", "report_example"))
    for name in ("RESULTS.md", "RUNS.md"):
        shutil.copy(ROOT / "benchmarks" / name, tmp_path / "benchmarks" / name)
    for path in (ROOT / "benchmarks").glob("*.json"):  # what published numbers trace to
        shutil.copy(path, tmp_path / "benchmarks" / path.name)
    shutil.copytree(ROOT / "benchmarks" / "learning_results", tmp_path / "benchmarks" / "learning_results")
    return tmp_path


def _changed(token: str) -> str:
    """The same number with its last digit moved by one."""
    last = token[-1]
    return token[:-1] + ("0" if last == "9" else str(int(last) + 1))


def test_each_published_number_changed_in_turn_fails_the_check(checkout):
    """Every registered number, changed in turn, fails its section's check (sections are counted
    apart, so that check sees what the whole check sees); every 100th goes through the whole
    check of its file as written, too."""
    values, entries = pn.json_values(checkout), pn._load(checkout)
    assert pn.check(checkout, values=values) == []
    tried = 0
    for path in pn.published(checkout):
        file, text = path.relative_to(checkout).as_posix(), path.read_text()
        for heading, start, chunk in pn.sections(text):
            mine = {k: v for k, v in entries.items() if k.startswith(f"{file} | {heading} | ")}
            assert pn.check_section(file, heading, chunk, mine, values) == []
            for n in list(pn.section_numbers(heading, chunk)):
                at, token = n["at"], n["number"]
                assert chunk[at:at + len(token)] == token
                changed = chunk[:at] + _changed(token) + chunk[at + len(token):]
                problems = pn.check_section(file, heading, changed, mine, values)
                assert problems, f"{file}: {token} changed in {n['line'].strip()!r} passed the check"
                if tried % 100 == 0:
                    path.write_text(text[:start + at] + _changed(token) + text[start + at + len(token):])
                    assert pn.check(checkout, files=[path], values=values), (file, n["line"])
                    path.write_text(text)
                tried += 1
    assert tried > 4000  # every number of README, docs/, RESULTS and RUNS, not the first one found
    assert pn.check(checkout, values=values) == []


def test_a_heading_used_twice_in_a_file_is_named(checkout):
    readme = checkout / "README.md"
    readme.write_text(readme.read_text() + "\n## Where things live\n\nAgain.\n")
    assert any("two sections headed '## Where things live'" in p for p in pn.check(checkout))


def test_a_table_number_edited_by_hand_is_named(checkout):
    """The issue's case: a number in a RESULTS table changed by hand (outside any claims passage)."""
    results = checkout / "benchmarks" / "RESULTS.md"
    text = results.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| 128x6 |") and " s |" in line)
    results.write_text(text.replace(row, row.replace("2.56 s", "2.66 s", 1)))
    problems = pn.check(checkout)
    assert any("2.66 in '| 128x6 |" in p and "not in the register" in p for p in problems), problems


def test_a_traced_number_follows_its_json_field(checkout):
    """A number registered as a JSON field fails the check when the field no longer prints as it."""
    register = json.loads((checkout / "benchmarks" / "published_numbers.json").read_text())["numbers"]
    key, entry = next((k, v) for k, v in register.items() if v.get("json", "").startswith("grid_cost.json.sweeps"))
    path = checkout / "benchmarks" / "grid_cost.json"
    data = json.loads(path.read_text())
    node, parts = data, re.findall(r"[^.\[\]]+", entry["json"].removeprefix("grid_cost.json."))
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[parts[-1]] = node[parts[-1]] * 2 + 1
    path.write_text(json.dumps(data))
    problems = pn.check(checkout)
    assert any(f"the JSON field {entry['json']} no longer prints as it" in p for p in problems), problems


def test_register_keeps_a_reviewers_word_and_drops_what_left_the_text(checkout):
    readme = checkout / "README.md"
    register = json.loads((checkout / "benchmarks" / "published_numbers.json").read_text())["numbers"]
    reviewed = {k: v for k, v in register.items() if k.startswith("README.md") and v["kind"] in pn.REVIEWED}
    assert reviewed and all(v["why"] for v in reviewed.values())
    readme.write_text(readme.read_text() + "\nA new paragraph with 7 new numbers.\n")
    assert any("7 in 'A new paragraph" in p for p in pn.check(checkout))
    again = pn.register(checkout)
    assert {k: again[k] for k in reviewed} == reviewed
    assert again["README.md | ## Where things live | 7 #1"] == {"kind": "unreviewed"}


UNIT_NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?=[xMk%]|ms\b|s\b)")


def test_a_number_with_a_unit_edited_in_its_last_digit_fails_the_check(checkout):
    """"1.86x" and "2.72M" are numbers to the register: an edit of their last digit (to "1.87x"),
    which leaves the digits before the point alone, fails the check, in every section that has one."""
    values, entries = pn.json_values(checkout), pn._load(checkout)
    tried = 0
    for path in pn.published(checkout):
        file, text = path.relative_to(checkout).as_posix(), path.read_text()
        for heading, _, chunk in pn.sections(text):
            mine = {k: v for k, v in entries.items() if k.startswith(f"{file} | {heading} | ")}
            for m in UNIT_NUMBER.finditer(chunk):
                changed = chunk[:m.end() - 1] + _changed(m.group(0))[-1] + chunk[m.end():]
                line = chunk[chunk.rfind("\n", 0, m.start()) + 1:chunk.find("\n", m.end())]
                assert pn.check_section(file, heading, changed, mine, values), \
                    f"{file}: {m.group(0)} edited in its last digit in {line.strip()[:100]!r} passed the check"
                tried += 1
    assert tried > 50
