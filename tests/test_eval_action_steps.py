"""`imf eval --action-steps K`: the same weights, replanning every K steps (receding horizon)."""
from __future__ import annotations

import json

import pytest

from imf.config import load_config
from imf.errors import ConfigError
from imf.train.evaluate import executing
from imf_process import run_imf
from test_final_eval import TINY


def test_executing_takes_up_to_every_action_predicted_from_the_current_step():
    cfg = load_config("pusht_image_cpu")  # horizon 10, one observation step, 8 executed
    planned = cfg.policy.n_action_steps
    assert executing(cfg, None) is cfg
    assert executing(cfg, 3).policy.n_action_steps == 3
    assert executing(cfg, 10).policy.n_action_steps == 10  # beyond the 8 it ran with: trained too
    assert cfg.policy.n_action_steps == planned  # the checkpoint's config is left as it was
    for bad in (0, 11):
        with pytest.raises(ConfigError, match=rf"--action-steps {bad}: this checkpoint predicts 10 actions "
                                              r"from the current step \(horizon 10 - n_obs_steps 1 \+ 1\); "
                                              r"execute 1..10 of them"):
            executing(cfg, bad)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("action_steps")
    proc = run_imf("trial", "smoke", *TINY, "eval.max_steps=24", f"data.cache_dir={root / 'cache'}",
                   "--out", str(root / "run"), "--store", "none")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root / "run" / "checkpoints" / "best.pt"


def _eval(checkpoint, *args):
    proc = run_imf("eval", str(checkpoint), "--n-test", "3", "--workers", "1", "--json", *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_all_planned_actions_is_the_default_and_fewer_are_reported(tiny_checkpoint):
    default = _eval(tiny_checkpoint)
    planned = default["action_steps"]
    assert planned == load_config("smoke").policy.n_action_steps
    assert _eval(tiny_checkpoint, "--action-steps", str(planned))["per_seed"] == default["per_seed"]
    assert _eval(tiny_checkpoint, "--action-steps", "1")["action_steps"] == 1
    smoke = load_config("smoke").policy
    ahead = smoke.horizon - smoke.n_obs_steps + 1
    assert ahead > planned  # the test reaches past the trained chunk
    assert _eval(tiny_checkpoint, "--action-steps", str(ahead))["action_steps"] == ahead


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--action-steps", "99"], "--action-steps 99: this checkpoint predicts"),
    (["--action-steps", "0"], "--action-steps 0: execute at least 1 action of each plan"),
    (["--holdout", "--action-steps", "2"], "--holdout scores on the holdout seeds with the checkpoint's own "
                                           "settings; drop --action-steps"),
])
def test_bad_action_steps_are_one_line(tiny_checkpoint, args, words):
    proc = run_imf("eval", str(tiny_checkpoint), *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], lines
    assert not (tiny_checkpoint.parent.parent / "holdout.json").exists()
