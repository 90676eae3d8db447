"""benchmarks/learning/learning.py at equal compute: ddpm and flow trained a number of samples beside the
preset's own imf runs (--samples, --with), and the claim saying what the comparison was equal in."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks" / "learning"), str(ROOT / "benchmarks" / "claims")]

import learning  # noqa: E402
import holdout_ledger  # noqa: E402
from claims_base import ClaimError, Data  # noqa: E402
from claims_compare import equal_compute, equal_in  # noqa: E402


def _record(objective: str, seed: int, samples: int, budget_s: float | None, **extra) -> dict:
    return {"id": f"{objective}-{seed}", "obs": "image", "preset": "pusht_image_cpu", "objective": objective,
            "sample_steps": 100 if objective == "ddpm" else 1, "seed": seed, "budget_s": budget_s,
            "budget_clock": "cpu", "steps": samples // 64, "samples": samples, "train_min": 60.0,
            "label": f"{objective}, seed {seed}", "best_test_score": 0.8, "best_test_score_se": 0.02,
            "best_test_success": 0.4, "best_epoch": 100, "curve": [[60.0, samples, 0.8, 0.4]],
            "selection_score": 0.8, "selection_score_se": 0.01, "selection_success": 0.4,
            "selection_success_se": 0.03, "holdout_score": 0.8, "holdout_score_se": 0.015,
            "holdout_success": 0.5, "holdout_success_se": 0.035, "holdout_episodes": 200,
            "holdout_near_misses": 3, "selection_episodes": 200, "eval_s": 5.0, **extra}


@pytest.fixture
def results(tmp_path, monkeypatch):
    folder = tmp_path / "benchmarks" / "learning_results"
    folder.mkdir(parents=True)
    preset = [_record("imf", 42, 1_900_000, 3600.0), _record("imf", 43, 1_920_000, 3600.0),
              _record("ddpm", 42, 1_000_000, 3600.0)]
    (folder / "image_preset.json").write_text(json.dumps(preset))
    monkeypatch.setattr(learning, "RESULTS_DIR", folder)
    return folder


def test_with_joins_the_imf_runs_of_a_committed_record_marked_with_it(results):
    joined = learning.joined_records(["image_preset"])
    assert [(r["objective"], r["seed"], r["record"]) for r in joined] == [
        ("imf", 42, "image_preset.json"), ("imf", 43, "image_preset.json")]


def test_with_a_record_that_is_not_there_is_one_line(results):
    with pytest.raises(SystemExit, match="--with nothing: no record .*nothing.json"):
        learning.joined_records(["nothing"])


def test_the_table_says_how_each_run_was_sized_and_where_the_joined_runs_trained(results):
    records = [*learning.joined_records(["image_preset"]), _record("ddpm", 42, 2_336_000, None, train_min=71.5)]
    text = "\n".join(learning.table(records, "image", "x86_64, 2 cores", "image"))
    assert "60 training minutes a run on the cpu clock" in text
    assert "a run without a budget trained a fixed number of samples" in text
    assert "the runs from image_preset.json were trained earlier" in text
    assert "| ddpm, seed 42 | 36500 | 2.34M | 71.5 |" in text


def _comparison(folder: Path, flow_variant: bool = True) -> Data:
    runs = [_record("imf", 42, 1_900_000, 3600.0, record="image_preset.json"),
            _record("imf", 43, 1_900_000, 3600.0, record="image_preset.json"),
            _record("ddpm", 42, 2_280_000, None, eval_s=50.0), _record("flow", 42, 2_280_000, None, eval_s=6.0)]
    (folder / "image.json").write_text(json.dumps(runs))
    variants = {"shipped": {"cpu_s_per_step": 0.100, "batch": 64},
                "objective.name=ddpm": {"cpu_s_per_step": 0.080, "batch": 64}}
    if flow_variant:
        variants["objective.name=flow"] = {"cpu_s_per_step": 0.090, "batch": 64}
    (folder / "image_step.json").write_text(json.dumps({"measured": "2026-12-04 22:55 UTC", "variants": variants}))
    return Data(folder.parents[1])


def test_equal_in_weighs_the_samples_by_each_step_against_imfs(results):
    text = equal_in(_comparison(results), "image")
    # ddpm: 2.28M x 0.8 / 1.9M = 0.96 of imf's compute; flow: 2.28M x 0.9 / 1.9M = 1.08
    assert "imf: the preset's own runs (image_preset.json), 60 CPU-minutes, 1.90M samples" in text
    assert "ddpm 2.28M samples at 0.80x imf's CPU a sample, 0.96x imf's compute" in text
    assert "flow 2.28M samples at 0.90x imf's CPU a sample, 1.08x imf's compute" in text


def test_equal_compute_reads_per_seed_and_claims_no_tie_where_a_seed_is_missing(results):
    lines = equal_compute(_comparison(results), "image")
    ddpm = next(line for line in lines if "minus ddpm-100" in line)
    assert "seed 43: no ddpm-100 run" in ddpm
    assert "coverage within 1.96 SE at seed 42 (seed 43 not measured), so no tie is claimed" in ddpm
    assert "6 s for flow-1" in lines[-1] and "imf-1's on its own record's machine" in lines[-1]


def test_the_reading_is_per_measure_and_a_tie_only_where_every_seed_ties(results):
    # coverage: within noise at both seeds; success: imf ahead at 42, ddpm ahead at 43 (both beyond)
    runs = [_record("imf", 42, 1_900_000, 3600.0), _record("imf", 43, 1_900_000, 3600.0, holdout_success=0.2),
            _record("ddpm", 42, 2_280_000, None, holdout_score=0.79, holdout_success=0.2),
            _record("ddpm", 43, 2_280_000, None, holdout_score=0.81, holdout_success=0.5)]
    (results / "image.json").write_text(json.dumps(runs))
    from claims_compare import comparison
    [line] = comparison(Data(results.parents[1]), "image", "ddpm", "ddpm-100")
    assert "Reading: coverage within 1.96 SE at every seed (a tie by that rule); success imf-1 ahead " \
           "beyond 1.96 SE at seed 42, ddpm-100 ahead beyond 1.96 SE at seed 43." in line
    runs[3]["holdout_success"] = 0.05  # now imf ahead at both
    (results / "image.json").write_text(json.dumps(runs))
    [line] = comparison(Data(results.parents[1]), "image", "ddpm", "ddpm-100")
    assert line.endswith("success imf-1 ahead beyond 1.96 SE at every seed.")


def test_a_step_not_measured_is_a_claim_error(results):
    with pytest.raises(ClaimError, match="no step of objective.name=flow"):
        equal_in(_comparison(results, flow_variant=False), "image")


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--samples", "-1"], "learning.py: --samples -1: give a positive number of training samples"),
    (["--samples", "1e5", "--minutes", "5"], "not allowed with argument"),
])
def test_bad_sizes_are_one_line(args, words):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "learning" / "learning.py"), "--obs", "image", *args,
                           "--no-write", "--out", "/nonexistent/never"], capture_output=True, text=True)
    assert proc.returncode != 0 and words in proc.stderr
    assert not Path("/nonexistent/never").exists()


def test_ablations_sized_by_samples_are_read_as_equal_in_samples_with_their_cpu(results):
    import claims
    rows = [{**_record("imf", 42, 800_000, None, train_min=20.0), "name": "base", "change": []},
            {**_record("imf", 42, 800_000, None, train_min=24.0, selection_score=0.9), "name": "ema",
             "change": ["training.ema_max=0.995"]}]
    (results / "ablations_image_samples.json").write_text(json.dumps(rows))
    lines = claims.results_ablations(Data(results.parents[1]), "ablations_image_samples", "base", {})
    assert "Each pair is equal in training samples, not in CPU seconds" in lines[0]
    assert "at 1.00x the samples (0.80M against 0.80M) and 1.20x the CPU seconds. Not adopted." in lines[-1]
    assert "coverage +0.100 ± 0.014" in lines[-1] and "beyond noise on coverage" in lines[-1]


def test_the_schedule_reading_pairs_seeds_and_says_what_is_beyond_noise(results):
    from claims import schedule_lines
    preset = [_record("imf", 42, 1_900_000, 3600.0), _record("imf", 43, 1_900_000, 3600.0)]
    rows = [_record("imf", 42, 1_904_000, None, name="c42", selection_score=0.9,
                    change=["training.seed=42", "training.lr_schedule=constant"]),
            _record("imf", 44, 1_904_000, None, name="c44", change=["training.seed=44"])]
    (results / "image_preset.json").write_text(json.dumps(preset))
    (results / "ablations_image_schedule.json").write_text(json.dumps(rows))
    lines = schedule_lines(Data(results.parents[1]))
    assert len(lines) == 3  # the header, seed 42 (seed 44 has no preset run), the verdict
    assert lines[1].startswith("- seed 42, `training.lr_schedule=constant` (c42), 1.90M samples in 60 CPU-minutes")
    assert "selection coverage +0.100 ± 0.014 (z +7.07)" in lines[1] and "beyond noise on coverage." in lines[1]
    rows[0]["seed"] = 45
    (results / "ablations_image_schedule.json").write_text(json.dumps(rows))
    with pytest.raises(ClaimError, match="share no training seed"):
        schedule_lines(Data(results.parents[1]))


# learning.py --no-look records: counted by the holdout ledger, never a record of looks
NO_LOOK = {name for name in holdout_ledger.COUNTED
           if name not in holdout_ledger.BEST and not name.startswith(("ablations_", "action_horizon_",
                                                                          "sampling_steps_", "checkpoint_choice_"))}
FIELDS = ("obs", "preset", "objective", "seed", "budget_s", "samples", "selection_score", "selection_score_se",
          "selection_success", "selection_success_se", "holdout_score", "holdout_score_se", "holdout_success",
          "holdout_success_se")


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks" / "learning_results").glob("*image*.json")),
                         ids=lambda p: p.name)
def test_every_committed_image_run_carries_the_fields_a_claim_reads(path):
    data = json.loads(path.read_text())
    runs = data if isinstance(data, list) else []  # the image_step, filmstrip and horizon files are not runs
    for run in runs:
        if "id" not in run:  # a rescoring row (action horizon, sampling steps) names its run folder instead
            continue
        if path.stem in NO_LOOK:  # learning.py --no-look: the selection seeds only, until --collect
            missing = [f for f in FIELDS if f not in run and not f.startswith("holdout_")]
            assert not [f for f in FIELDS if f.startswith("holdout_") and f in run], f"{path.name}: a look"
        else:
            missing = [f for f in FIELDS if f not in run]
        assert not missing, f"{path.name}: {run.get('id')} lacks {missing}"
        assert run["obs"] == "image"
