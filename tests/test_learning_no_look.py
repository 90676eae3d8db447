"""benchmarks/learning/learning.py --no-look: train and score on the selection seeds, look later."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import learning  # noqa: E402


@pytest.fixture
def trials(monkeypatch, tmp_path):
    """The trial commands learning.py would run, each answered as a finished trial."""
    seen: list[list[str]] = []

    def fake_imf(args, threads, log=None, **kw):
        seen.append(args)
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(learning, "_imf", fake_imf)
    monkeypatch.setattr(learning, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(learning, "write_section", lambda *a: pytest.fail("--no-look wrote a section"))
    return seen


def test_no_look_trains_without_the_holdout_and_records_nothing(trials, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["learning.py", "--runs", "imf:2:42,imf:2:43", "--no-look",
                                      "--out", str(tmp_path / "runs"), "--minutes", "1"])
    learning.main()
    assert [a[0] for a in trials] == ["trial", "trial"]
    assert all("--holdout" not in a and "--final-eval" in a for a in trials)
    assert {a[a.index("--id") + 1] for a in trials} == {"learning-keypoints-imf-2-s42", "learning-keypoints-imf-2-s43"}
    assert not (tmp_path / "results").exists()
    assert f"--collect {tmp_path / 'runs' / 'keypoints'}" in capsys.readouterr().out


def test_a_trial_with_its_look_still_asks_for_the_holdout(trials, tmp_path):
    learning.train(tmp_path, "keypoints", "imf", 1, 42, [], 1, [])
    assert "--holdout" in trials[0]


def test_no_look_with_collect_is_one_line(trials, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["learning.py", "--no-look", "--collect", str(tmp_path)])
    with pytest.raises(SystemExit, match="--no-look trains without a look; --collect looks at runs already"):
        learning.main()
    assert trials == []
