"""benchmarks/learning/time_outs.py: a checkpoint at the task's episode length and at a longer one."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import time_outs  # noqa: E402
from test_eval_action_steps import tiny_checkpoint  # noqa: E402,F401 - the module's tiny trained checkpoint


def _run_dir(tmp_path: Path, name: str = "a") -> Path:
    run = tmp_path / name
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "latest.pt").write_bytes(b"")
    config = {"name": "pusht_lowdim_cpu", "policy": {"obs_type": "keypoints"}, "objective": {"name": "imf"},
              "training": {"seed": 42}, "eval": {"max_steps": 300}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def _fake_scored(checkpoint, seeds, max_steps):
    # seed 0 lost at 300 and finished at 600; seed 1 lost either way; seed 2 a near miss; seed 3 finished
    scores = {300: [0.4, 0.5, 0.9, 1.0], 600: [1.0, 0.6, 0.95, 1.0]}[max_steps][: len(seeds)]
    steps = {300: [300, 300, 300, 150], 600: [500, 600, 600, 150]}[max_steps][: len(seeds)]
    return scores, steps


class _Episode:
    def __init__(self, seed):
        self.steps = {500000: 200, 500001: 150}.get(seed, 100)


def test_the_shortfall_is_split_into_lost_seeds_and_what_more_time_recovers(tmp_path, monkeypatch):
    monkeypatch.setattr(time_outs, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(time_outs, "write_section", lambda title, text: None)
    monkeypatch.setattr(time_outs, "scored", _fake_scored)
    monkeypatch.setattr(time_outs, "run_expert_episode", lambda seed, legacy, recipe: _Episode(seed))
    assert time_outs.main([str(_run_dir(tmp_path)), "--episodes", "4"]) == 0
    data = json.loads((tmp_path / "time_outs_keypoints.json").read_text())
    row = data["runs"][0]
    assert row["per_seed_task"] == [0.4, 0.5, 0.9, 1.0] and row["long_steps"] == 600
    m = time_outs.reading(row, data["seeds"])
    assert m["shortfall"] == pytest.approx((0.6 + 0.5 + 0.1) / 4)
    assert m["shortfall_lost"] == pytest.approx((0.6 + 0.5) / 4)
    assert (m["lost"], m["lost_recovered"], m["lost_finished"]) == (2, 1, 1)
    text = "\n".join(time_outs.lines_for(data["runs"], data["seeds"], data["expert_steps"]))
    assert "138 steps on average; on the 2 seeds under 0.8 in any run: 175 on average" in text
    # finished given 600 steps: seed 0 (500 steps against the expert's 200) and seed 3 (150 against 100)
    assert time_outs.pace(row, data["seeds"], data["expert_steps"]) == (pytest.approx((2.5 + 1.5) / 2), 2)
    assert "| 2.00 (2) |" in text
    assert data["expert_steps_at_pace"] == {}  # every run here learned from the expert's own pace


def test_runs_of_a_faster_demonstrator_get_the_expert_at_their_pace_beside_them(tmp_path, monkeypatch):
    monkeypatch.setattr(time_outs, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(time_outs, "write_section", lambda title, text: None)
    monkeypatch.setattr(time_outs, "scored", _fake_scored)
    paces = []

    def episode(seed, legacy, recipe):
        paces.append(recipe.pace)
        return _Episode(seed) if recipe.pace == 1.0 else type("E", (), {"steps": 80})()
    monkeypatch.setattr(time_outs, "run_expert_episode", episode)
    run = _run_dir(tmp_path)
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "data": {"expert_pace": 2.0}}))
    assert time_outs.main([str(run), "--episodes", "4"]) == 0
    data = json.loads((tmp_path / "time_outs_keypoints.json").read_text())
    assert data["runs"][0]["expert_pace"] == 2.0 and sorted(set(paces)) == [1.0, 2.0]
    assert data["expert_steps_at_pace"] == {"2.0": {str(s): 80 for s in data["seeds"]}}
    text = "\n".join(time_outs.lines_for(data["runs"], data["seeds"], data["expert_steps"],
                                         data["expert_steps_at_pace"]))
    assert "(seed 42, demos at pace 2)" in text and "At pace 2 (the demonstrator of the runs marked so) the expert " \
        "takes 80 steps on average on the same seeds." in text


@pytest.mark.parametrize("args, words", [
    (["--long", "300"], "--long 300: give more steps than the task's 300"),
    (["--episodes", "0"], "--episodes 0: give 1 or more selection seeds"),
    (["--checkpoint", "best"], "has no checkpoints/best.pt"),
])
def test_bad_arguments_are_one_line(tmp_path, args, words):
    with pytest.raises(SystemExit, match=words):
        time_outs.main([str(_run_dir(tmp_path)), *args])


@pytest.mark.slow
def test_a_real_tiny_run_is_scored_at_both_lengths(tiny_checkpoint, capsys):  # noqa: F811
    run_dir = tiny_checkpoint.parent.parent
    assert time_outs.main([str(run_dir), "--checkpoint", "best", "--episodes", "2", "--long", "48", "--no-write"]) == 0
    out = capsys.readouterr().out
    assert "| best.pt |" in out and "(24) |" in out and "(48) |" in out and "The scripted expert on the 2 seeds" in out
