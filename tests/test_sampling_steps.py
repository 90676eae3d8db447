"""benchmarks/learning/sampling_steps.py: best.pt at several sampling steps, paired on the same seeds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import sampling_steps  # noqa: E402


def _run_dir(tmp_path: Path, name: str, seed: int = 42, objective: dict | None = None) -> Path:
    run = tmp_path / name
    (run / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"")
    config = {"name": "pusht_lowdim_cpu", "policy": {"obs_type": "keypoints", "n_action_steps": 8},
              "objective": objective or {"name": "imf", "sample_steps": 1}, "training": {"seed": seed}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def _fake_rescore(checkpoint, flag, n, episodes, extra):
    # coverage gains 0.02 a seed at 2 steps on run "a", 0.04 on run "b"; success on seed 0 at 2 steps only
    gain = {"a": 0.02, "b": 0.04}[checkpoint.parent.parent.name] * (n == 2)
    cover = {str(500000 + i): 0.5 + gain + 0.01 * i for i in range(episodes)}
    success = {str(500000 + i): float(n == 2 and i == 0) for i in range(episodes)}
    assert flag == "--sample-steps"
    return {"sample_steps": n, "per_seed": cover, "per_seed_success": success, "eval_s": 1.0}


@pytest.fixture
def results(tmp_path, monkeypatch):
    folder = tmp_path / "learning_results"
    folder.mkdir()
    monkeypatch.setattr(sampling_steps, "RESULTS_DIR", folder)
    monkeypatch.setattr(sampling_steps, "write_section", lambda section, text: None)
    monkeypatch.setattr(sampling_steps, "rescore", _fake_rescore)
    return folder


def test_each_run_is_paired_against_its_own_steps_and_the_runs_are_averaged(tmp_path, results):
    runs = [str(_run_dir(tmp_path, "a")), str(_run_dir(tmp_path, "b", seed=43))]
    for parallel in ("1", "3"):  # the same runs measured again replace their own rows, in order at any parallelism
        assert sampling_steps.main([*runs, "--steps", "2,4", "--episodes", "4", "--parallel", parallel]) == 0
    rows = json.loads((results / "sampling_steps_keypoints.json").read_text())
    assert [(r["run"], r["sample_steps"], r["trained_steps"]) for r in rows] == [
        ("a", 1, 1), ("a", 2, 1), ("a", 4, 1), ("b", 1, 1), ("b", 2, 1), ("b", 4, 1)]
    mean, se, gaps = sampling_steps.gaps_over_runs(rows, 2, "per_seed")
    assert gaps == pytest.approx([0.02, 0.04]) and mean == pytest.approx(0.03) and se == pytest.approx(0.01)
    assert sampling_steps.gaps_over_runs(rows, 4, "per_seed")[0] == pytest.approx(0.0)
    assert sampling_steps.gaps_over_runs(rows, 2, "per_seed_success")[0] == pytest.approx(0.25)
    assert "- 2 steps, each run's own sampling noise, over 2 of 2 runs: coverage +0.030 ± 0.010 (+0.020, " \
           "+0.040)" in "\n".join(sampling_steps.summary(rows))


def test_another_noise_seed_is_a_second_reading_kept_apart(tmp_path, results):
    runs = [str(_run_dir(tmp_path, "a")), str(_run_dir(tmp_path, "b", seed=43))]
    assert sampling_steps.main([*runs, "--steps", "2", "--episodes", "4"]) == 0
    assert sampling_steps.main([*runs, "--steps", "2", "--episodes", "4", "--noise-seed", "7"]) == 0
    rows = json.loads((results / "sampling_steps_keypoints.json").read_text())
    assert [(r["run"], r["noise_seed"]) for r in rows] == [("a", None)] * 2 + [("b", None)] * 2 + \
        [("a", 7)] * 2 + [("b", 7)] * 2
    text = sampling_steps.summary(rows)
    assert [line.split(",")[1].strip() for line in text] == ["each run's own sampling noise", "sampling noise seed 7"]
    assert any(line.startswith("| a (noise 7) | 2 (ran with 1)") for line in sampling_steps.table(rows))


def test_one_run_is_its_gap_alone_without_an_se(tmp_path, results):
    assert sampling_steps.main([str(_run_dir(tmp_path, "a")), "--steps", "2", "--episodes", "4"]) == 0
    rows = json.loads((results / "sampling_steps_keypoints.json").read_text())
    assert sampling_steps.summary(rows) == [
        "- 2 steps, each run's own sampling noise, one run: coverage +0.020, success +25.0 points."]


def test_ddpm_is_paired_against_its_own_steps_option():
    assert sampling_steps.trained_steps({"objective": {"name": "ddpm", "options": {"steps": 16}}}) == 16
    assert sampling_steps.trained_steps({"objective": {"name": "imf", "sample_steps": 2}}) == 2


@pytest.mark.parametrize("args, words", [
    (["--steps", "two"], "--steps 'two': give whole numbers separated by commas"),
    (["--steps", "0,2"], "--steps 0: sample each plan in at least 1 step"),
    (["--parallel", "0"], "--parallel 0: give 1 or more imf eval processes at a time"),
])
def test_bad_steps_are_one_line_and_write_nothing(tmp_path, results, args, words):
    with pytest.raises(SystemExit, match=words):
        sampling_steps.main([str(_run_dir(tmp_path, "a")), *args])
    assert not (results / "sampling_steps_keypoints.json").exists()


def test_a_folder_without_best_pt_is_one_line_before_anything_is_scored(tmp_path, results):
    with pytest.raises(SystemExit, match="has no checkpoints/best.pt"):
        sampling_steps.main([str(_run_dir(tmp_path, "a")), str(tmp_path / "missing")])
    assert not (results / "sampling_steps_keypoints.json").exists()


def test_a_run_measured_at_other_steps_keeps_the_rows_of_the_steps_it_had(tmp_path, results):
    run = str(_run_dir(tmp_path, "a"))
    assert sampling_steps.main([run, "--steps", "2", "--episodes", "4"]) == 0
    assert sampling_steps.main([run, "--steps", "4", "--episodes", "4"]) == 0
    rows = json.loads((results / "sampling_steps_keypoints.json").read_text())
    assert sorted(r["sample_steps"] for r in rows) == [1, 2, 4]
