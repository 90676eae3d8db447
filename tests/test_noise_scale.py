"""objective.noise_scale and `imf eval --noise-scale s`: each plan starts from s times unit noise, the
same weights; benchmarks/learning/noise_scale.py pairs the scales on the same seeds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
import yaml

from imf.config import ObjectiveConfig, load_config
from imf.errors import ConfigError
from imf.objectives.base import euler_sampler
from imf.objectives.ddpm import DdpmObjective
from imf.train.evaluate import check_options, starting_noise
from imf_process import run_imf
from test_eval_action_steps import tiny_checkpoint  # noqa: F401 - the module's tiny trained checkpoint

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))

import noise_scale  # noqa: E402
import sampling_steps  # noqa: E402


class _Still(torch.nn.Module):
    """A velocity of zero everywhere: the sampler returns its starting noise."""
    horizon, action_dim = 4, 2

    def forward(self, z, t, h, cond):
        return torch.zeros_like(z)


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_the_sampler_starts_from_the_scaled_draw_of_the_same_noise(scale):
    cond = torch.zeros(3, 5)
    unit = euler_sampler(_Still(), cond, 2, torch.Generator().manual_seed(0))
    scaled = euler_sampler(_Still(), cond, 2, torch.Generator().manual_seed(0), noise_scale=scale)
    torch.testing.assert_close(scaled, scale * unit)


def test_the_config_takes_a_positive_scale_and_names_the_key_otherwise():
    assert load_config("smoke").objective.noise_scale == 1.0
    assert load_config("smoke", ["objective.noise_scale=0.5"]).objective.noise_scale == 0.5
    for bad in ("0", "-1"):
        with pytest.raises(ConfigError, match="objective.noise_scale"):
            load_config("smoke", [f"objective.noise_scale={bad}"])


def test_ddpm_refuses_a_scale_other_than_one():
    DdpmObjective(ObjectiveConfig(name="ddpm"))
    with pytest.raises(ConfigError, match=r"config key 'objective.noise_scale': got 0.5, but ddpm samples from "
                                          r"unit noise only"):
        DdpmObjective(ObjectiveConfig(name="ddpm", noise_scale=0.5))


def test_the_plugins_options_check_asks_the_objective_about_its_section():
    """fill_options (what a trial, a sweep's plan and a dry run call before anything is made) asks
    ddpm's check_config, so a sweep refuses the scale before any trial starts."""
    from imf.registry import fill_options
    fill_options(load_config("smoke", ["objective.name=ddpm"]))
    with pytest.raises(ConfigError, match=r"config key 'objective.noise_scale': got 0.5, but ddpm"):
        fill_options(load_config("smoke", ["objective.name=ddpm", "objective.noise_scale=0.5"]))
    fill_options(load_config("smoke", ["objective.noise_scale=0.5"]))  # imf takes it


@pytest.mark.slow
def test_a_trial_with_a_scale_ddpm_refuses_fails_before_its_run_folder_is_made(tmp_path):
    """The objective's own refusal of a core key is checked with the plugins' options, before any
    folder is made: one line on stderr, nothing on disk."""
    out = tmp_path / "run"
    result = run_imf("trial", "smoke", "objective.name=ddpm", "objective.noise_scale=0.5", "--out", str(out),
                     "--store", "none")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "imf: error: config key 'objective.noise_scale': got 0.5, but ddpm samples from unit noise only (1); "
        "the flow-type objectives take other scales"]
    assert not out.exists()


def test_starting_noise_changes_the_config_of_a_copy_and_of_each_ensemble_member():
    state = {"config": {"objective": {"name": "imf"}}, "members": [{"config": {"objective": {"name": "imf"}}}]}
    scaled = starting_noise(state, 0.75)
    assert scaled["config"]["objective"] == {"name": "imf", "noise_scale": 0.75}
    assert scaled["members"][0]["config"]["objective"]["noise_scale"] == 0.75
    assert "noise_scale" not in state["config"]["objective"]  # the loaded state is left as it was
    assert starting_noise(state, None) is state
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match=f"--noise-scale {bad}: the starting noise's standard deviation must "
                                              f"be a positive number"):
            check_options(None, None, None, noise_scale=bad)


@pytest.mark.slow
def test_eval_scores_the_same_weights_from_a_scaled_start(tiny_checkpoint):  # noqa: F811
    def scored(*args):
        proc = run_imf("eval", str(tiny_checkpoint), "--n-test", "3", "--workers", "1", "--json", *args)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)
    default, unit, narrow = scored(), scored("--noise-scale", "1"), scored("--noise-scale", "0.25")
    assert default["noise_scale"] == unit["noise_scale"] == 1.0 and narrow["noise_scale"] == 0.25
    assert unit["per_seed"] == default["per_seed"]  # unit noise is the objective's own
    text = run_imf("eval", str(tiny_checkpoint), "--n-test", "2", "--workers", "1", "--noise-scale", "0.5")
    assert text.returncode == 0 and "starting noise x 0.5" in text.stdout, text.stdout
    for args, words in ((["--noise-scale", "0"], "--noise-scale 0.0: the starting noise's standard deviation"),
                        (["--holdout", "--noise-scale", "0.5"], "settings; drop --noise-scale")):
        proc = run_imf("eval", str(tiny_checkpoint), *args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], lines
    assert not (tiny_checkpoint.parent.parent / "holdout.json").exists()


def _run_dir(tmp_path: Path, name: str, seed: int = 42) -> Path:
    run = tmp_path / name
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "latest.pt").write_bytes(b"")
    config = {"name": "pusht_lowdim_cpu", "policy": {"obs_type": "keypoints", "n_action_steps": 8},
              "objective": {"name": "imf", "sample_steps": 2}, "training": {"seed": seed}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def _fake_rescore(checkpoint, flag, scale, episodes, extra):
    # coverage falls 0.02 a seed at s 0.5 on run "a", 0.04 on run "b"; s 1 is each run's own
    assert flag == "--noise-scale" and checkpoint.name == "latest.pt" and extra == ["--sample-steps", "2"]
    loss = {"a": 0.02, "b": 0.04}[checkpoint.parent.parent.name] * (scale == 0.5)
    return {"per_seed": {str(500000 + i): 0.9 - loss for i in range(episodes)},
            "per_seed_success": {str(500000 + i): 1.0 for i in range(episodes)}, "eval_s": 1.0}


def test_the_benchmark_pairs_each_scale_with_the_runs_own(tmp_path, monkeypatch):
    monkeypatch.setattr(sampling_steps, "RESULTS_DIR", tmp_path)  # its publish() writes for both scripts
    monkeypatch.setattr(sampling_steps, "write_section", lambda title, text: None)
    monkeypatch.setattr(noise_scale, "rescore", _fake_rescore)
    runs = [str(_run_dir(tmp_path, "a")), str(_run_dir(tmp_path, "b", seed=43))]
    assert noise_scale.main([*runs, "--scales", "0.5", "--episodes", "4", "--sample-steps", "2"]) == 0
    rows = json.loads((tmp_path / "noise_scale_keypoints.json").read_text())
    assert [(r["run"], r["noise_scale"], r["trained_scale"]) for r in rows] == [
        ("a", 1.0, 1.0), ("a", 0.5, 1.0), ("b", 1.0, 1.0), ("b", 0.5, 1.0)]
    text = noise_scale.summary(rows, noise_scale.KEY, noise_scale.TRAINED, noise_scale.UNIT)
    assert text == ["- noise x 0.5, each run's own sampling noise, over 2 of 2 runs: coverage -0.030 ± 0.010 "
                    "(-0.020, -0.040), success +0.0 ± 0.0 points (+0.0, +0.0)."]


@pytest.mark.parametrize("args, words", [
    (["--scales", "0.5,x"], "give numbers separated by commas"),
    (["--scales", "0,1"], "each scale must be a positive number"),
    (["--parallel", "0"], "--parallel 0"),
])
def test_the_benchmarks_bad_arguments_are_one_line(tmp_path, args, words):
    with pytest.raises(SystemExit, match=words):
        noise_scale.main([str(_run_dir(tmp_path, "a")), *args])


def test_a_run_without_the_checkpoint_is_named(tmp_path):
    with pytest.raises(SystemExit, match=r"has no checkpoints/best.pt"):
        noise_scale.main([str(_run_dir(tmp_path, "a")), "--checkpoint", "best"])
