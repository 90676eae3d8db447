"""``imf sweep --seeds`` (each seed its own trial) and ``--final-eval N`` handed to every trial."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from imf.config import load_config
from imf.errors import ConfigError, SweepError
from imf.config.eval_seeds import final_eval_seeds
from imf.seeds import SELECTION
from imf.sweep.engine import Engine
from imf.sweep.plan import build_trials, parse_seeds
from imf.sweep.launch import SweepRequest, dry_run, plan_sweep


def test_several_seeds_make_one_trial_per_seed_and_cell():
    trials = build_trials("s", "smoke", ["64x1,2"], [], seeds=[42, 43, 44])
    assert sorted(t.id for t in trials) == sorted(f"s-causal-e64-l{l}-s{s}" for l in (1, 2)
                                                  for s in (42, 43, 44))
    assert {(t.params["n_layer"], t.seed) for t in trials} == {(l, s) for l in (1, 2) for s in (42, 43, 44)}
    assert not any(o.startswith("training.seed") for t in trials for o in t.overrides)


def test_one_seed_keeps_the_ids_and_params_of_seed():
    with_seeds = build_trials("s", "smoke", ["64x1,2"], [], seeds=[7])
    with_seed = build_trials("s", "smoke", ["64x1,2"], [], seed=7)
    assert [(t.id, t.seed, t.params, t.overrides) for t in with_seeds] == \
           [(t.id, t.seed, t.params, t.overrides) for t in with_seed]


def test_seed_as_a_grid_axis_is_the_same_plan_as_seeds():
    by_grid = build_trials("s", "smoke", ["64x1", "training.seed=42,43"], [])
    by_flag = build_trials("s", "smoke", ["64x1"], [], seeds=[42, 43])
    assert [(t.id, t.seed) for t in by_grid] == [(t.id, t.seed) for t in by_flag]


@pytest.mark.parametrize("text, words", [("42,x", "expected comma-separated integers"),
                                         ("", "expected comma-separated"), ("1,,2", "expected"),
                                         ("-1", "expected"), ("5,5", "seed 5 is given twice")])
def test_bad_seed_lists(text, words):
    with pytest.raises(SweepError, match=words):
        parse_seeds(text)


def test_seeds_conflict_with_seed_and_with_a_seed_grid():
    with pytest.raises(SweepError, match="--seeds and --seed"):
        build_trials("s", "smoke", ["64x1"], [], seed=1, seeds=[1, 2])
    with pytest.raises(SweepError, match="--seeds and a training.seed grid"):
        build_trials("s", "smoke", ["64x1", "seed=3,4"], [], seeds=[1, 2])
    with pytest.raises(SweepError, match="--seeds and a training.seed override"):
        build_trials("s", "smoke", ["64x1"], [" training.seed =7"], seeds=[1, 2])


def test_seeds_conflict_with_a_seed_override(tmp_path):
    req = SweepRequest(config="smoke", grids=["64x1"], queues=["local:cpu"], out=tmp_path,
                       overrides=["training.seed=7"], seeds=[1, 2])
    with pytest.raises(SweepError, match="--seeds and a training.seed override"):
        plan_sweep(req)
    req.seeds = None  # an override alone sets every trial's seed
    assert [t.id for t in plan_sweep(req)[1].trials] == ["sweep-causal-e64-l1-s7"]


def test_sweep_state_keeps_the_seed_axis_and_the_final_eval(tmp_path):
    req = SweepRequest(config="smoke", grids=["64x1"], queues=["local:cpu"], name="fs", out=tmp_path,
                       seeds=[1, 2], final_eval=30)
    sdir, state, _ = plan_sweep(req)
    assert state.grid == ["64x1", "training.seed=1,2"] and state.final_eval == 30
    sdir.save(state)
    loaded = sdir.load()
    assert loaded.final_eval == 30
    argv = Engine(sdir, loaded).job_request(loaded.trials[0]).argv
    assert argv[argv.index("--final-eval") + 1] == "30"
    plain = plan_sweep(SweepRequest(config="smoke", grids=["64x1"], queues=["local:cpu"], out=tmp_path))
    assert "--final-eval" not in Engine(plain[0], plain[1]).job_request(plain[1].trials[0]).argv


def test_dry_run_shows_every_seed_trial_with_its_final_eval(tmp_path):
    text = dry_run(SweepRequest(config="smoke", grids=["64x1,2"], queues=["local:cpu"], name="d",
                                out=tmp_path, seeds=[42, 43], final_eval=200))
    commands = [line for line in text.splitlines() if line.startswith("  d-")]
    assert len(commands) == 4
    for line in commands:
        tid = line.split()[0]
        assert f"--id {tid} " in line and f"--seed {tid.rsplit('-s', 1)[1]} " in line
        assert line.endswith("--final-eval 200")
    assert not (tmp_path / "d").exists()


def test_final_eval_seeds_are_disjoint_from_the_rollout_seeds():
    ev = load_config("pusht_image_imf").eval
    seeds = final_eval_seeds(200, ev)
    assert seeds == list(range(SELECTION.start, SELECTION.start + 200))
    test = range(ev.test_start_seed, ev.test_start_seed + ev.n_test)
    train = range(ev.train_start_seed, ev.train_start_seed + ev.n_train)
    assert not set(seeds) & (set(test) | set(train))
    for bad in (0, -3, 300_001):  # 500000..799999: below the holdout (900000..)
        with pytest.raises(ConfigError, match="from 1 to 300000"):
            final_eval_seeds(bad, ev)
    moved = load_config("smoke", ["eval.test_start_seed=500100"]).eval
    with pytest.raises(ConfigError, match="overlap the test rollout seeds 500100..500103"):
        final_eval_seeds(101, moved)
    assert final_eval_seeds(100, moved)[-1] == 500099


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--seeds", "42,x"], "--seeds '42,x': expected comma-separated integers"),
    (["--final-eval", "0"], "--final-eval 0: the number of selection episodes"),
    (["--final-eval", "x"], "Invalid value for '--final-eval'"),
    (["--seeds", "1,2", "--seed", "3"], "--seeds and --seed both given"),
])
def test_bad_sweep_flags_are_one_line_and_write_nothing(tmp_path, args, words):
    cmd = [sys.executable, "-m", "imf", "sweep", "smoke", "--grid", "64x1", "--out",
           str(tmp_path / "runs"), "--queue", "local:cpu", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "IMF_TRIAL_COMMAND": "false"})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: ") and words in lines[0], lines
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_resume_refuses_new_seeds_or_final_eval(tmp_path):
    cmd = [sys.executable, "-m", "imf", "sweep", "--resume", str(tmp_path), "--seeds", "1,2",
           "--final-eval", "5"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "drop --seeds, --final-eval" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
