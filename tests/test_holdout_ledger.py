"""benchmarks/learning/holdout_ledger.py: the committed ledger of holdout looks, and the result JSON's look
counts written from it."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import holdout_ledger  # noqa: E402

RESULTS = ROOT / "benchmarks" / "learning_results"


def test_every_committed_look_count_is_the_ledgers():
    assert holdout_ledger.check(ROOT) == []


def test_every_result_file_that_counts_looks_is_checked_against_the_ledger():
    """A record carrying holdout_looks in a file the ledger does not read would never be checked."""
    carrying = set()
    for path in RESULTS.glob("*.json"):
        data = json.loads(path.read_text())
        rows = data.get("runs", []) if isinstance(data, dict) else data
        if any(isinstance(r, dict) and "holdout_looks" in r for r in rows):
            carrying.add(path.stem)
    unchecked = sorted(carrying - {*holdout_ledger.COUNTED, "attention"})
    assert not unchecked, f"add to holdout_ledger.COUNTED: {unchecked}"


def test_every_holdout_number_in_the_result_json_has_its_look_in_the_ledger():
    """What a rebuild finds in the JSON (in a shallow clone: the current files only) is all in the
    committed ledger: a new holdout number is not published without its look."""
    def identity(e):
        return e["run"], e["checkpoint"], round(e["coverage"], 6)
    committed = {identity(e) for e in holdout_ledger.load()["looks"]}
    missing = [e for e in holdout_ledger.rebuild(ROOT)["looks"] if identity(e) not in committed]
    assert not missing, f"run `python benchmarks/learning/holdout_ledger.py --rebuild`: {missing[:3]}"


def _rows(name: str) -> list[dict]:
    return json.loads((RESULTS / f"{name}.json").read_text())


def test_the_image_presets_runs_count_their_curve_looks():
    """image_preset.json's runs were looked at once at best.pt and once at each snapshot of their
    holdout curve (samples_to_threshold.json); the counts say so, from the ledger."""
    ledger = holdout_ledger.load()
    curves = json.loads((RESULTS / "samples_to_threshold.json").read_text())["curves"]
    for run in _rows("image_preset"):
        curve = [c for c in curves if c["run"].startswith("/work/runs/img60/") and c["seed"] == run["seed"]]
        assert len(curve) == 1
        assert run["holdout_looks"] == holdout_ledger.looks(ledger, holdout_ledger.run_key(run)) == 1 + len(curve[0]["points"])
    # an ablation run whose holdout curve was drawn later is not "never looked at"
    base = next(r for r in _rows("ablations_image") if r["name"] == "img30-base")
    assert base["holdout_score"] is None and base["holdout_looks"] == 6


def test_one_run_in_several_files_is_one_set_of_looks():
    ledger = holdout_ledger.load()
    kp = next(r for r in _rows("keypoints") if r["objective"] == "imf" and r["seed"] == 42)
    same = [r for r in _rows("data_scaling") if holdout_ledger.run_key(r) == holdout_ledger.run_key(kp)]
    assert len(same) == 1 and same[0]["demo_episodes"] == 500
    looks = [e for e in ledger["looks"] if e["run"] == holdout_ledger.run_key(kp)]
    assert len(looks) == 1 and {"keypoints.json: learning-keypoints-imf-1-s42", "data_scaling.json: "
                                "learning-keypoints-imf-1-s42"} <= set(looks[0]["records"])


def test_a_rescored_run_is_named_once_by_its_folder():
    """sampling_steps_image.json holds four rows (two sampling steps, two noise seeds) of each run
    of image_preset_2step: the look at that run lists the file once, by the run's folder."""
    look = next(e for e in holdout_ledger.load()["looks"]
                if "image_preset_2step.json: learning-image-imf-2-s42" in e["records"])
    assert [r for r in look["records"] if r.startswith("sampling_steps_image.json")] == \
        ["sampling_steps_image.json: imf-2-s42"]


def test_every_look_says_what_when_and_how():
    ledger = holdout_ledger.load()
    assert ledger["looks"] and ledger["choices"]
    for look in ledger["looks"]:
        assert look["published"]["commit"] and look["published"]["date"], look
        assert look["command"].startswith("python benchmarks/") and look["seeds"].startswith("900000..")
        assert "checkpoint_sha256" in look and "chose" in look
    presets = {c["preset"] for c in ledger["choices"]}
    assert presets == {"pusht_lowdim_cpu", "pusht_image_cpu"}


@pytest.fixture
def checkout(tmp_path):
    shutil.copytree(RESULTS, tmp_path / "benchmarks" / "learning_results")
    return tmp_path


def test_a_count_edited_by_hand_fails_the_check_and_write_repairs_it(checkout):
    path = checkout / "benchmarks" / "learning_results" / "image_preset.json"
    text = path.read_text()
    rows = json.loads(text)
    rows[0]["holdout_looks"] = 1  # what the file said before the ledger
    path.write_text(json.dumps(rows, indent=1) + "\n")
    problems = holdout_ledger.check(checkout)
    assert len(problems) == 1 and "image_preset.json: learning-image-imf-1-s42: holdout_looks 1, the ledger counts 9" in problems[0]
    holdout_ledger.write(checkout)
    assert path.read_text() == text and holdout_ledger.check(checkout) == []


def test_a_look_removed_from_the_ledger_fails_the_check(checkout):
    path = checkout / "benchmarks" / "learning_results" / "holdout_ledger.json"
    ledger = json.loads(path.read_text())
    ledger["looks"] = [e for e in ledger["looks"] if e["run"] != "keypoints/ddpm/seed 42/1201408 samples"]
    path.write_text(json.dumps(ledger))
    problems = holdout_ledger.check(checkout)
    assert any("keypoints.json: learning-keypoints-ddpm-100-s42: holdout_looks 1, the ledger counts 0" in p
               for p in problems), problems
    assert any("a holdout score with no look in the ledger" in p for p in problems), problems


def test_two_settings_under_one_looked_run_key_fail_the_check(checkout):
    """The ledger keys a run by observations, objective, seed and samples: an ablation row of another
    setting that trained the same samples at the same seed as a looked-at run would be credited with
    its looks. The check names the collision instead of misattributing them."""
    folder = checkout / "benchmarks" / "learning_results"
    looked = next(r for r in _rows("keypoints_preset_h16") if r["seed"] == 42)
    path = folder / "ablations_keypoints_samples.json"
    rows = json.loads(path.read_text())
    twin = {**rows[0], "name": "kpS-twin", "id": "kpS-twin", "seed": 42, "samples": looked["samples"],
            "obs": looked["obs"], "objective": looked["objective"], "preset": looked["preset"],
            "change": ["training.lr=1e-3"], "overrides": [*rows[0]["overrides"], "training.lr=1e-3"],
            "holdout_looks": holdout_ledger.looks(holdout_ledger.load(), holdout_ledger.run_key(looked))}
    path.write_text(json.dumps([*rows, twin], indent=1) + "\n")
    problems = holdout_ledger.check(checkout)
    assert any("kpS-twin" in p and "keypoints_preset_h16.json: learning-keypoints-imf-2-s42" in p
               and "training.lr=1e-3" in p for p in problems), problems
