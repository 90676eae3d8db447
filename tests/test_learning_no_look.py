"""benchmarks/learning/learning.py --no-look: train and score on the selection seeds, look later."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import learning  # noqa: E402


class _Seen(list):
    """The trial commands run, and (title, file) of each section written."""
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[tuple[str, Path]] = []


@pytest.fixture
def trials(monkeypatch, tmp_path):
    """The trial commands learning.py would run, each answered as a finished trial whose record is
    the one read_record gives a run scored on the selection seeds only."""
    seen = _Seen()
    sections = seen.sections

    def fake_imf(args, threads, log=None, **kw):
        seen.append(args)
        return subprocess.CompletedProcess(args, 0)

    def fake_record(run_dir, threads):
        seed = int(run_dir.name.rsplit("-s", 1)[1])
        return {"id": f"learning-keypoints-{run_dir.name}", "obs": "keypoints", "objective": "imf", "sample_steps": 2,
                "seed": seed, "budget_s": 60.0, "steps": 100, "samples": 6400, "train_min": 1.0,
                "label": f"imf, 2 steps, seed {seed}", "best_test_score": 0.5, "best_test_score_se": 0.02,
                "best_test_success": 0.1, "selection_score": 0.4 + seed / 1000, "selection_score_se": 0.01,
                "selection_success": 0.05, "selection_success_se": 0.01, "eval_s": 2.0, "curve": []}

    monkeypatch.setattr(learning, "_imf", fake_imf)
    monkeypatch.setattr(learning, "record_of", fake_record)
    monkeypatch.setattr(learning, "RESULTS_DIR", tmp_path / "results")
    (tmp_path / "results").mkdir()
    monkeypatch.setattr(learning, "write_section", lambda title, lines, path: sections.append((title, path)))
    monkeypatch.setattr(learning, "plot", lambda *a: pytest.fail("--no-look drew a figure under docs/"))
    return seen


def _no_look(monkeypatch, tmp_path, *extra: str) -> None:
    monkeypatch.setattr(sys, "argv", ["learning.py", "--runs", "imf:2:42,imf:2:43", "--no-look",
                                      "--out", str(tmp_path / "runs"), "--minutes", "1", *extra])
    learning.main()


def test_no_look_trains_without_the_holdout_and_records_the_selection_seeds(trials, tmp_path, monkeypatch, capsys):
    _no_look(monkeypatch, tmp_path, "--name", "keypoints_k9")
    assert [a[0] for a in trials] == ["trial", "trial"]
    assert all("--holdout" not in a and "--final-eval" in a for a in trials)
    assert {a[a.index("--id") + 1] for a in trials} == {"learning-keypoints-imf-2-s42", "learning-keypoints-imf-2-s43"}
    records = json.loads((tmp_path / "results" / "keypoints_k9.json").read_text())
    assert [(r["seed"], r["selection_score"], r["holdout_looks"]) for r in records] == [(42, 0.442, 0), (43, 0.443, 0)]
    assert not any(k.startswith("holdout_") and k != "holdout_looks" for r in records for k in r)
    [(title, path)] = trials.sections
    assert title == "## Learning, keypoints observations, keypoints_k9 (benchmarks/learning/learning.py)"
    assert path == learning.RUNS  # it chose, so it sits with the runs, not with the answers
    out = capsys.readouterr().out
    assert "no run looked at the holdout (--no-look)" in out and "| 0.442 ± 0.010 | 0.050 ± 0.010 | - | - |" in out
    assert f"--collect {tmp_path / 'runs' / 'keypoints'} --name keypoints_k9" in out


def test_a_run_looked_at_since_counts_its_looks_in_the_selection_record(trials, tmp_path, monkeypatch):
    ledger = {"looks": [{"run": "keypoints/imf/seed 43/6400 samples"}], "choices": []}
    (tmp_path / "results" / "holdout_ledger.json").write_text(json.dumps(ledger))
    _no_look(monkeypatch, tmp_path, "--name", "keypoints_k9")
    records = json.loads((tmp_path / "results" / "keypoints_k9.json").read_text())
    assert [r["holdout_looks"] for r in records] == [0, 1]


@pytest.mark.parametrize("extra, words", [
    ((), "give the record a --name"),
    (("--name", "keypoints_preset_h16"), "keypoints_preset_h16.json holds holdout looks"),
    (("--name", "mine", "--with", "image_preset"), "takes no runs of a record of looks"),
])
def test_a_no_look_record_that_cannot_be_written_is_one_line_before_any_training(trials, tmp_path, monkeypatch,
                                                                                extra, words):
    with pytest.raises(SystemExit, match=words):
        _no_look(monkeypatch, tmp_path, *extra)
    assert trials == [] and not (tmp_path / "runs").exists()


def test_a_no_look_record_never_replaces_one_with_holdout_numbers(trials, tmp_path, monkeypatch):
    looked = tmp_path / "results" / "mine.json"
    looked.write_text(json.dumps([{"id": "x", "seed": 42, "samples": 1, "holdout_score": 0.8}]))
    before = looked.read_text()
    with pytest.raises(SystemExit, match="mine.json holds holdout looks"):
        _no_look(monkeypatch, tmp_path, "--name", "mine")
    assert looked.read_text() == before and trials == []


def test_a_trial_with_its_look_still_asks_for_the_holdout(trials, tmp_path):
    learning.train(tmp_path, "keypoints", "imf", 1, 42, [], 1, [])
    assert "--holdout" in trials[0]


def test_no_look_with_collect_is_one_line(trials, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["learning.py", "--no-look", "--collect", str(tmp_path)])
    with pytest.raises(SystemExit, match="--no-look trains without a look; --collect looks at runs already"):
        learning.main()
    assert trials == []


def test_the_section_names_the_setting_its_runs_shared():
    """A record of a setting says which: the --set every run saved, not learning.py's own sizing."""
    sized = ["objective.name=imf", "training.time_budget_s=60", "training.budget_clock=cpu", "logging.trackers=none"]
    records = [{"overrides": [*sized, f"training.seed={s}", "training.ema_max=0.9999"]} for s in (42, 43)]
    assert learning.shared_sets(records) == ["training.ema_max=0.9999"]
    assert learning.shared_sets([*records, {"overrides": sized}]) == []  # not every run's: not the record's
