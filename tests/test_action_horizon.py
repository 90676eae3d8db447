"""benchmarks/learning/action_horizon.py: one checkpoint at several action horizons, paired on the same seeds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import action_horizon  # noqa: E402


def _run_dir(tmp_path: Path, name: str = "img30-ref") -> Path:
    run = tmp_path / name
    (run / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"")
    config = {"name": "pusht_image_cpu", "policy": {"obs_type": "image", "n_action_steps": 4, "horizon": 5,
                                                    "n_obs_steps": 1},
              "training": {"seed": 42}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def _fake_score(checkpoint, k, episodes, sample_steps=None):
    # coverage rises by 0.1 a seed for every action fewer than 4; success only at k = 1 on seed 0;
    # latest.pt scores 0.05 above best.pt at every k
    cover = {str(500000 + i): 0.5 + 0.1 * (4 - k) + 0.01 * i + 0.05 * (checkpoint.name == "latest.pt")
             for i in range(episodes)}
    success = {str(500000 + i): float(k == 1 and i == 0) for i in range(episodes)}
    return {"action_steps": k, "per_seed": cover, "per_seed_success": success, "eval_s": 1.0}


@pytest.fixture
def results(tmp_path, monkeypatch):
    folder = tmp_path / "learning_results"
    folder.mkdir()
    monkeypatch.setattr(action_horizon, "RESULTS_DIR", folder)
    monkeypatch.setattr(action_horizon, "write_section", lambda section, text: None)
    monkeypatch.setattr(action_horizon, "score", _fake_score)
    return folder


def test_rows_are_paired_against_the_trained_horizon_and_other_runs_stay(tmp_path, results):
    assert action_horizon.main([str(_run_dir(tmp_path, "older")), "--steps", "2", "--episodes", "4"]) == 0
    for _ in range(2):  # a run measured again replaces its own rows
        assert action_horizon.main([str(_run_dir(tmp_path)), "--steps", "1,2,5", "--episodes", "4"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    assert [r["run"] for r in rows] == ["older"] * 2 + ["img30-ref"] * 4
    mine = rows[2:]
    assert [r["action_steps"] for r in mine] == [4, 5, 2, 1]  # the trained horizon first, always scored
    assert all(r["holdout_score"] is None and r["holdout_looks"] == 0 for r in mine)  # no ledger, no look
    assert mine[0]["selection_score"] == pytest.approx(0.515)
    gap, se = action_horizon.paired_gap(mine, 1, "per_seed")
    assert gap == pytest.approx(0.3) and se == pytest.approx(0.0, abs=1e-12)  # every seed moved alike
    success_gap, success_se = action_horizon.paired_gap(mine, 1, "per_seed_success")
    assert success_gap == pytest.approx(0.25) and success_se == pytest.approx(0.25)


@pytest.mark.parametrize("args, words", [
    (["--steps", "two"], "--steps 'two': give whole numbers separated by commas"),
    (["--steps", "9"], "--steps 9: this checkpoint predicts 5 actions from the current step; give 1..5"),
    (["--steps", "0"], "--steps 0: this checkpoint predicts 5 actions"),
])
def test_bad_steps_are_one_line_and_write_nothing(tmp_path, results, args, words):
    with pytest.raises(SystemExit, match=words):
        action_horizon.main([str(_run_dir(tmp_path)), *args])
    assert not (results / "action_horizon_image.json").exists()


def test_a_folder_without_best_pt_is_one_line(tmp_path, results):
    with pytest.raises(SystemExit, match="has no checkpoints/best.pt"):
        action_horizon.main([str(tmp_path)])


def test_a_row_counts_the_ledgers_looks_at_its_run(tmp_path, results):
    """The looks at the run are the holdout ledger's (its curve, a preset's record), not a literal."""
    run = _run_dir(tmp_path)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["training"]["batch_size"] = 64
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    (run / "logs.json.txt").write_text(json.dumps({"epoch": 0, "global_step": 100}) + "\n")
    key = "image/imf/seed 42/6400 samples"
    looks = [{"run": key, "checkpoint": f"snapshot {i}"} for i in range(3)] + [{"run": "image/imf/seed 42/1 samples"}]
    (results / "holdout_ledger.json").write_text(json.dumps({"looks": looks, "choices": []}))
    assert action_horizon.main([str(run), "--steps", "2", "--episodes", "4"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    assert [r["holdout_looks"] for r in rows] == [3, 3]


def test_a_row_names_its_run_so_the_ledgers_rewrite_keeps_its_looks(tmp_path, results):
    """holdout_ledger.py --write recounts every row from the ledger by the run it names (observations,
    objective, seed, samples): a row without its samples was recounted as never looked at."""
    import holdout_ledger
    run = _run_dir(tmp_path)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["training"]["batch_size"] = 64
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    (run / "logs.json.txt").write_text(json.dumps({"epoch": 0, "global_step": 100}) + "\n")
    ledger = {"looks": [{"run": "image/imf/seed 42/6400 samples", "checkpoint": "best.pt"}], "choices": []}
    (results / "holdout_ledger.json").write_text(json.dumps(ledger))
    assert action_horizon.main([str(run), "--steps", "2", "--episodes", "4"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    assert [r["samples"] for r in rows] == [6400, 6400]
    assert [holdout_ledger.looks_of(ledger, r) for r in rows] == [1, 1]  # what --write would write


def test_the_claims_passage_gives_each_run_and_ks_verdict_and_the_runs_mean_gap(tmp_path, results):
    sys.path.insert(0, str(ROOT / "benchmarks" / "claims"))
    from claims_horizon import horizon_lines
    for name in ("a", "b"):
        assert action_horizon.main([str(_run_dir(tmp_path, name)), "--steps", "1,2", "--episodes", "3"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    lines = horizon_lines({"action_horizon_image": rows}, {("a", 1): "Adopted here."}, ("a", "b"))
    assert any(line.startswith("- a, 1 executed:") and line.endswith("Adopted here.") for line in lines)
    assert any(line.startswith("- b, 1 executed:") and line.endswith("Not adopted.") for line in lines)  # by run
    assert lines[-3] == "Over a and b, the mean of the runs' paired gaps against 4 executed:"
    # the fake scorer: coverage +0.1 for each action fewer than 4, success only at 1 on one seed of 3
    assert lines[-2:] == ["- 2 executed: coverage +0.200 (+0.200, +0.200); success +0.0 points (+0.0, +0.0).",
                          "- 1 executed: coverage +0.300 (+0.300, +0.300); success +33.3 points (+33.3, +33.3)."]


def test_two_runs_of_one_folder_name_keep_their_rows_and_are_told_apart(tmp_path, results):
    """Run folders of one name from two records (img16/imf-2-s42, img14/imf-2-s42) are two runs: the
    second's rows used to replace the first's, and the table and claims grouped them as one."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "claims"))
    from claims_horizon import horizon_lines
    for parent, steps in (("img16", 100), ("img14", 90)):
        run = _run_dir(tmp_path / parent, "imf-2-s42")
        config = yaml.safe_load((run / "config.yaml").read_text())
        config["training"]["batch_size"] = 64
        (run / "config.yaml").write_text(yaml.safe_dump(config))
        (run / "logs.json.txt").write_text(json.dumps({"epoch": 0, "global_step": steps}) + "\n")
        assert action_horizon.main([str(run), "--steps", "2", "--episodes", "4"]) == 0
    assert action_horizon.main([str(tmp_path / "img14" / "imf-2-s42"), "--steps", "2", "--episodes", "4"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    assert [r["samples"] for r in rows] == [6400, 6400, 5760, 5760]  # measured again: its own rows replaced
    assert sorted(action_horizon.by_run(rows)) == ["imf-2-s42 (image/imf/seed 42/5760 samples)",
                                                   "imf-2-s42 (image/imf/seed 42/6400 samples)"]
    assert sum(line.startswith("| imf-2-s42 (") for line in action_horizon.table(rows)) == 4
    lines = horizon_lines({"action_horizon_image": rows}, {})
    assert sum(line.startswith("- imf-2-s42 (") for line in lines) == 4  # each run's baseline and its K=2


def test_a_run_measured_at_another_k_keeps_the_rows_of_the_ks_it_had(tmp_path, results):
    """A K asked later is a new row beside the earlier ones; only the same K is measured again."""
    assert action_horizon.main([str(_run_dir(tmp_path)), "--steps", "2", "--episodes", "4"]) == 0
    assert action_horizon.main([str(_run_dir(tmp_path)), "--steps", "1", "--episodes", "4"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    assert sorted(r["action_steps"] for r in rows) == [1, 2, 4]  # the trained 4, once, measured again


def test_two_runs_of_one_seed_and_one_sample_count_are_two_runs(tmp_path, results):
    """Ablation runs at a fixed number of samples (kpS-h16b, kpS-h16-full: keypoints, imf, seed 42,
    2.0M samples) share the ledger's run key; their folders still tell them apart, so neither's rows
    replace the other's, and the table and the claims read each alone."""
    for name in ("kpS-h16b", "kpS-h16-full"):
        run = _run_dir(tmp_path, name)
        config = yaml.safe_load((run / "config.yaml").read_text())
        config["training"]["batch_size"] = 64
        (run / "config.yaml").write_text(yaml.safe_dump(config))
        (run / "logs.json.txt").write_text(json.dumps({"epoch": 0, "global_step": 100}) + "\n")
        assert action_horizon.main([str(run), "--steps", "2", "--episodes", "4"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    assert [r["run"] for r in rows] == ["kpS-h16b"] * 2 + ["kpS-h16-full"] * 2
    assert sorted(action_horizon.by_run(rows)) == ["kpS-h16-full", "kpS-h16b"]


def test_latest_pt_at_other_sampling_steps_is_a_reading_of_its_own(tmp_path, results):
    run = _run_dir(tmp_path, "a")
    (run / "checkpoints" / "latest.pt").write_bytes(b"")
    assert action_horizon.main([str(run), "--steps", "2", "--episodes", "3"]) == 0
    assert action_horizon.main([str(run), "--steps", "2", "--episodes", "3", "--checkpoint", "latest",
                                "--sample-steps", "2"]) == 0
    rows = json.loads((results / "action_horizon_image.json").read_text())
    assert [(r["action_steps"], r.get("checkpoint_name"), r.get("sample_steps")) for r in rows] == [
        (4, None, None), (2, None, None), (4, "latest.pt", 2), (2, "latest.pt", 2)]  # the best.pt rows stay
    readings = action_horizon.by_reading(rows)
    assert sorted(readings) == ["a", "a, latest.pt, 2 sampling steps"]
    for mine in readings.values():  # each reading pairs with its own rows: +0.2 at 2 against 4 in both
        assert action_horizon.paired_gap(mine, 2, "per_seed")[0] == pytest.approx(0.2)
    assert any(line.startswith("| a, latest.pt, 2 sampling steps | 2 (ran with 4)") for line in action_horizon.table(rows))


def test_a_run_without_latest_pt_or_with_zero_sampling_steps_is_one_line(tmp_path, results):
    run = _run_dir(tmp_path, "a")
    with pytest.raises(SystemExit, match="has no checkpoints/latest.pt"):
        action_horizon.main([str(run), "--checkpoint", "latest"])
    with pytest.raises(SystemExit, match="--sample-steps 0: sample each plan in at least 1 step"):
        action_horizon.main([str(run), "--sample-steps", "0"])
