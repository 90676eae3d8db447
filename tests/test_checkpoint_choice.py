"""benchmarks/learning/checkpoint_choice.py: best.pt against latest.pt, paired on the same selection seeds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import checkpoint_choice  # noqa: E402


def _run_dir(tmp_path: Path, name: str, seed: int) -> Path:
    run = tmp_path / name
    (run / "checkpoints").mkdir(parents=True)
    for ckpt in ("best.pt", "latest.pt"):
        (run / "checkpoints" / ckpt).write_bytes(b"")
    config = {"name": "pusht_lowdim_cpu", "policy": {"obs_type": "keypoints", "n_action_steps": 8},
              "objective": {"name": "imf"}, "training": {"seed": seed}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def _fake_rescore(checkpoint, flag, value, episodes, extra=None):
    # latest.pt gains 0.02 a seed on run "a", loses 0.01 on run "b"; success on seed 0 only, at latest on "a"
    run, latest = checkpoint.parent.parent.name, checkpoint.name == "latest.pt"
    gain = {"a": 0.02, "b": -0.01}[run] * latest
    cover = {str(500000 + i): 0.8 + gain + 0.01 * i for i in range(episodes)}
    success = {str(500000 + i): float(i == 0 and latest and run == "a") for i in range(episodes)}
    assert (flag, value) == ("--action-steps", 8)  # scored executing what the run executed
    return {"epoch": 99 if latest else 70, "per_seed": cover, "per_seed_success": success, "eval_s": 1.0}


@pytest.fixture
def results(tmp_path, monkeypatch):
    folder = tmp_path / "learning_results"
    folder.mkdir()
    sections = []
    monkeypatch.setattr(checkpoint_choice, "RESULTS_DIR", folder)
    monkeypatch.setattr(checkpoint_choice, "write_section", lambda title, lines, path: sections.append(lines))
    monkeypatch.setattr(checkpoint_choice, "rescore", _fake_rescore)
    return folder, sections


def test_latest_is_paired_against_best_per_run_and_averaged_over_runs(tmp_path, results):
    folder, sections = results
    runs = [str(_run_dir(tmp_path, "a", 42)), str(_run_dir(tmp_path, "b", 43))]
    for _ in range(2):  # measured again: each run's two rows replaced, none added
        assert checkpoint_choice.main([*runs, "--episodes", "4"]) == 0
    rows = json.loads((folder / "checkpoint_choice_keypoints.json").read_text())
    assert [(r["run"], r["checkpoint"], r["epoch"]) for r in rows] == [
        ("a", "best", 70), ("a", "latest", 99), ("b", "best", 70), ("b", "latest", 99)]
    assert all(r["holdout_score"] is None and r["holdout_looks"] == 0 for r in rows)
    text = "\n".join(sections[-1])
    assert "| a | latest.pt | 99 | 0.835 ± 0.006 | 25.0% ± 25.0 | +0.020 ± 0.000 | +25.0 ± 25.0 pts |" in text
    assert ("- latest.pt against best.pt over 2 run(s): coverage +0.005 ± 0.015 (+0.020, -0.010); success +12.5 ± "
            "12.5 points (+25.0, +0.0); latest.pt ahead on coverage at 1 of 2.") in text


def test_a_run_without_latest_pt_is_one_line_before_anything_is_scored(tmp_path, results, monkeypatch):
    folder, _ = results
    run = _run_dir(tmp_path, "a", 42)
    (run / "checkpoints" / "latest.pt").unlink()
    monkeypatch.setattr(checkpoint_choice, "rescore", lambda *a, **k: pytest.fail("scored before the check"))
    with pytest.raises(SystemExit, match=r"a has no checkpoints/latest.pt \(a finished imf trial is needed\)"):
        checkpoint_choice.main([str(run)])
    assert not any(folder.iterdir())
