"""`imf eval --action-steps K` and `--sample-steps N`: the same weights, replanning every K steps
(receding horizon) or sampling each plan in N steps."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from imf.config import load_config
from imf.errors import ConfigError
from imf.train.evaluate import TorchPolicyAdapter, executing
from imf_process import run_imf
from test_final_eval import TINY
from test_policy_core import make_policy, obs


def test_executing_takes_up_to_every_action_predicted_from_the_current_step():
    cfg = load_config("pusht_image_cpu")  # one observation step: predicts more than it executes
    policy, planned = cfg.policy, cfg.policy.n_action_steps
    predicted = policy.horizon - policy.n_obs_steps + 1
    assert predicted > planned
    assert executing(cfg, None) is cfg
    assert executing(cfg, 3).policy.n_action_steps == 3
    assert executing(cfg, predicted).policy.n_action_steps == predicted  # beyond the 8 it ran with: trained too
    assert cfg.policy.n_action_steps == planned  # the checkpoint's config is left as it was
    for bad in (0, predicted + 1):
        with pytest.raises(ConfigError, match=rf"--action-steps {bad}: this checkpoint predicts {predicted} actions "
                                              rf"from the current step \(horizon {policy.horizon} - n_obs_steps "
                                              rf"{policy.n_obs_steps} \+ 1\); execute 1..{predicted} of them"):
            executing(cfg, bad)


def test_the_adapter_samples_in_the_steps_it_is_given_and_else_in_the_objectives_own():
    policy = make_policy("objective.sample_steps=1").eval()
    calls = []
    policy.model.register_forward_hook(lambda *_: calls.append(1))
    numpy_obs = {k: v.numpy() for k, v in obs().items()}
    per_plan = {}
    for n_steps in (None, 1, 3):
        calls.clear()
        action = TorchPolicyAdapter(policy, torch.device("cpu"), seed=0, n_steps=n_steps)(numpy_obs)
        per_plan[n_steps] = (len(calls), action)
    assert [per_plan[n][0] for n in (None, 1, 3)] == [1, 1, 3]  # one transformer pass a sampling step
    np.testing.assert_array_equal(per_plan[None][1], per_plan[1][1])  # the objective's own setting is 1
    assert not np.allclose(per_plan[1][1], per_plan[3][1])  # same noise, another path from it


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
def test_sampling_steps_are_reported_and_the_objectives_own_is_the_default(tiny_checkpoint):
    default = _eval(tiny_checkpoint)
    assert default["sample_steps"] is None  # the objective's own setting (smoke: objective.sample_steps 1)
    same = _eval(tiny_checkpoint, "--sample-steps", str(load_config("smoke").objective.sample_steps))
    assert same["per_seed"] == default["per_seed"] and same["sample_steps"] == 1
    assert _eval(tiny_checkpoint, "--sample-steps", "4")["sample_steps"] == 4
    text = run_imf("eval", str(tiny_checkpoint), "--n-test", "2", "--workers", "1", "--sample-steps", "2")
    planned = load_config("smoke").policy.n_action_steps
    assert text.returncode == 0 and f"{planned} actions executed a plan, 2 sampling steps a plan" in text.stdout, \
        text.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--action-steps", "99"], "--action-steps 99: this checkpoint predicts"),
    (["--action-steps", "0"], "--action-steps 0: execute at least 1 action of each plan"),
    (["--holdout", "--action-steps", "2"], "--holdout scores on the holdout seeds with the checkpoint's own "
                                           "settings; drop --action-steps"),
    (["--sample-steps", "0"], "--sample-steps 0: sample each plan in at least 1 step"),
    (["--holdout", "--sample-steps", "2"], "--holdout scores on the holdout seeds with the checkpoint's own "
                                           "settings; drop --sample-steps"),
])
def test_bad_action_steps_are_one_line(tiny_checkpoint, args, words):
    proc = run_imf("eval", str(tiny_checkpoint), *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], lines
    assert not (tiny_checkpoint.parent.parent / "holdout.json").exists()
