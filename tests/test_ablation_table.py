"""benchmarks/learning/ablation.py's table: the rows already committed stay beside the folder's runs, so a
session that measures one more change does not need the earlier sessions' run folders."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import ablation  # noqa: E402
from sizing import sizing  # noqa: E402


def _row(name: str, score: float) -> dict:
    return {"name": name, "change": [] if name == "base" else [f"x={name}"], "obs": "image", "steps": 10,
            "samples_s": 100.0, "best_test_score": score, "best_test_score_se": 0.01, "best_test_success": 0.1,
            "selection_score": score, "selection_score_se": 0.01, "selection_success": 0.1,
            "selection_success_se": 0.01}


def test_committed_rows_stay_and_a_folder_measured_again_replaces_its_row(tmp_path, monkeypatch):
    results = tmp_path / "learning_results"
    results.mkdir()
    (results / "ablations_image.json").write_text(json.dumps([_row("base", 0.5), _row("old", 0.6)]))
    monkeypatch.setattr(ablation, "RESULTS_DIR", results)
    monkeypatch.setattr(ablation, "write_section", lambda section, text: None)
    runs = tmp_path / "runs"
    for name in ("old", "new"):
        (runs / name).mkdir(parents=True)
    monkeypatch.setattr(ablation, "read_run", lambda folder: _row(folder.name, 0.7))
    text = ablation.table(runs, "base", write=True)
    rows = {r["name"]: r["best_test_score"] for r in json.loads((results / "ablations_image.json").read_text())}
    assert rows == {"base": 0.5, "old": 0.7, "new": 0.7}
    written = json.loads((results / "ablations_image.json").read_text())
    assert all(r["holdout_score"] is None and r["holdout_looks"] == 0 for r in written)  # no ledger, no look
    assert text.index("| base |") < text.index("| new |")  # the baseline first, wherever it came from
    ablation.table(runs, "base", write=True, only=True)
    assert {r["name"] for r in json.loads((results / "ablations_image.json").read_text())} == {"old", "new"}


def test_a_named_table_of_runs_sized_by_samples_keeps_its_own_json_and_section(tmp_path, monkeypatch):
    results = tmp_path / "learning_results"
    results.mkdir()
    (results / "ablations_image.json").write_text(json.dumps([_row("img30-base", 0.5)]))  # another table
    sections = []
    monkeypatch.setattr(ablation, "RESULTS_DIR", results)
    monkeypatch.setattr(ablation, "write_section", lambda section, text: sections.append(section))
    runs = tmp_path / "runs"
    for name in ("base", "ema"):
        (runs / name).mkdir(parents=True)
    monkeypatch.setattr(ablation, "read_run", lambda folder: {**_row(folder.name, 0.7), "budget_s": None})
    text = ablation.table(runs, "base", write=True, name="image_samples")
    assert sections == ["## Ablations, image, samples (benchmarks/learning/ablation.py)"]
    assert "trained a fixed number of samples" in text and "budget on the cpu clock" not in text
    assert {r["name"] for r in json.loads((results / "ablations_image_samples.json").read_text())} == {"base", "ema"}
    assert [r["name"] for r in json.loads((results / "ablations_image.json").read_text())] == ["img30-base"]


def _trial_folder(root: Path, name: str, status: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump({
        "name": "pusht_image_cpu", "policy": {"obs_type": "image"}, "objective": {"name": "imf", "sample_steps": 1},
        "training": {"seed": 42, "batch_size": 64, "time_budget_s": 1800, "budget_clock": "cpu"}}))
    (folder / "summary.json").write_text(json.dumps({"id": name, "status": status, "overrides": []}))
    (folder / "logs.json.txt").write_text(json.dumps(
        {"epoch": 3, "global_step": 100, "train_s": 60.0, "test_mean_score": 0.5, "test_per_seed": {"1": 0.4, "2": 0.6},
         "test_success_rate": 0.0}) + "\n")
    return folder


def test_a_run_still_training_or_gone_is_skipped_and_said(tmp_path, capsys):
    # "running" with no live process holding the folder's lock reads as interrupted
    assert ablation.read_run(_trial_folder(tmp_path, "cut-short", "running")) is None
    assert "skipped cut-short: interrupted (a row is a finished run)" in capsys.readouterr().err
    begun = _trial_folder(tmp_path, "begun", "running")
    (begun / "logs.json.txt").unlink()  # a run just started has written no log line yet
    assert ablation.read_run(begun) is None
    row = ablation.read_run(_trial_folder(tmp_path, "done", "completed"))
    assert row["name"] == "done" and row["samples"] == 6400


def test_a_samples_budget_is_epochs_of_the_preset_steps_and_batch():
    assert sizing("x", "pusht_image_cpu", [], 30, None) == ["training.time_budget_s=1800", "training.budget_clock=cpu"]
    # 250 steps an epoch of 64: 16000 samples; of 128: 32000. The cpu clock stays, to time the run
    assert sizing("x", "pusht_image_cpu", [], 30, 6.4e5) == ["training.time_budget_s=null", "training.budget_clock=cpu",
                                                             "training.num_epochs=40"]
    assert sizing("x", "pusht_image_cpu", ["training.batch_size=128"], 30, 6.4e5)[-1] == "training.num_epochs=20"


def test_no_minutes_is_the_presets_own_budget():
    """learning.py's default: a preset's runs train as the preset ships (60 minutes for images,
    not the keypoint preset's 15), an override of the budget included."""
    assert sizing("x", "pusht_image_cpu", [], None, None) == ["training.time_budget_s=3600", "training.budget_clock=cpu"]
    assert sizing("x", "pusht_lowdim_cpu", [], None, None)[0] == "training.time_budget_s=900"
    assert sizing("x", "pusht_lowdim_cpu", ["training.time_budget_s=120"], None, None)[0] == "training.time_budget_s=120"
    with pytest.raises(SystemExit, match=re.escape("x: pusht_image_imf has no training.time_budget_s of its own; "
                                                   "give --minutes or --samples")):
        sizing("x", "pusht_image_imf", [], None, None)


@pytest.mark.parametrize("preset, overrides, samples, words", [
    ("pusht_image_imf", [], 6e5, "--samples needs training.max_train_steps (the steps of an epoch) set in "
                                 "pusht_image_imf or the overrides; it is null"),
    ("pusht_image_cpu", [], -1, "ablation.py: --samples -1: give a positive number of training samples"),
    ("pusht_image_cpu", ["training.batch_sise=1"], 6e5, "training.batch_sise"),
])
def test_a_bad_samples_budget_is_one_line(preset, overrides, samples, words):
    with pytest.raises(SystemExit, match=re.escape(words)):
        sizing("ablation.py", preset, overrides, 30, samples)


def test_holdout_looks_are_the_ledgers_count_of_looks_at_the_run(tmp_path, monkeypatch):
    """An ablation never looks at the holdout, but its run may have been looked at since (a holdout
    curve, a preset's record): the row says what the ledger counts."""
    results = tmp_path / "learning_results"
    results.mkdir()
    base = {**_row("base", 0.5), "objective": "imf", "seed": 42, "samples": 640}
    (results / "ablations_image.json").write_text(json.dumps([base]))
    (results / "holdout_ledger.json").write_text(json.dumps({"looks": [
        {"run": "image/imf/seed 42/640 samples"}, {"run": "image/imf/seed 42/640 samples"},
        {"run": "image/imf/seed 43/640 samples"}], "choices": []}))
    monkeypatch.setattr(ablation, "RESULTS_DIR", results)
    monkeypatch.setattr(ablation, "write_section", lambda section, text: None)
    runs = tmp_path / "runs"
    (runs / "new").mkdir(parents=True)
    monkeypatch.setattr(ablation, "read_run", lambda folder: {**_row(folder.name, 0.7), "objective": "imf",
                                                               "seed": 43, "samples": 999})
    ablation.table(runs, "base", write=True)
    written = {r["name"]: r["holdout_looks"] for r in json.loads((results / "ablations_image.json").read_text())}
    assert written == {"base": 2, "new": 0}


def test_a_row_is_named_by_its_folder_so_runs_with_one_trial_id_stay_apart(tmp_path):
    """learning.py names both arms' runs learning-keypoints-imf-2-s42; put in folders (or links)
    of their own names, they are two rows, each with its own change."""
    first = _trial_folder(tmp_path / "trained", "learning-imf-2-s42", "completed")
    other = _trial_folder(tmp_path / "trained-h16", "learning-imf-2-s42", "completed")
    summary = json.loads((other / "summary.json").read_text())
    (other / "summary.json").write_text(json.dumps({**summary, "overrides": ["policy.horizon=16"]}))
    rows = tmp_path / "rows"
    rows.mkdir()
    (rows / "r7-base").symlink_to(first, target_is_directory=True)
    (rows / "r7-h16").symlink_to(other, target_is_directory=True)
    named = {r["name"]: r["change"] for r in (ablation.read_run(d) for d in sorted(rows.iterdir()))}
    assert named == {"r7-base": [], "r7-h16": ["policy.horizon=16"]}
