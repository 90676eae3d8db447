"""training.compile: torch.compile of the training passes gives the eager loss curve for every
objective (the written-out JVP traces, forward-mode AD does not), and a real trial trains."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from imf.config import load_config
from imf.data.normalizer import MinMaxNormalizer
from imf.errors import ConfigError
from imf.policy import ImfPolicy
from imf.registry.options import fill_options
from imf.train.trial import TrialOptions, run_trial

pytestmark = pytest.mark.slow  # compiles (about a minute per graph on a loaded 2-core machine)


def _losses(objective: str, compiled: bool, steps: int = 4) -> list[float]:
    rng = np.random.default_rng(0)
    norm = MinMaxNormalizer()
    norm.fit("action", rng.uniform(0, 512, (100, 2)))
    norm.fit("keypoints", rng.uniform(0, 512, (100, 20)))
    cfg = load_config("smoke", [f"objective.name={objective}", "policy.obs_type=keypoints", "policy.n_layer=1"])
    fill_options(cfg)
    torch.manual_seed(0)
    policy = ImfPolicy(cfg, norm)
    if compiled:
        policy.compile_steps()
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    h = cfg.policy.horizon
    batch = {"obs": {"keypoints": torch.rand(32, h, 20, generator=g) * 512},
             "action": torch.rand(32, h, 2, generator=g) * 512}
    out = []
    for i in range(steps):
        loss, _ = policy.compute_loss(batch, generator=torch.Generator().manual_seed(i))
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


@pytest.mark.parametrize("objective", ["imf", "meanflow", "flow", "ddpm"])
def test_compiled_training_follows_the_eager_loss_curve(objective):
    eager, compiled = _losses(objective, False), _losses(objective, True)
    assert eager[0] != eager[-1]  # the weights moved
    assert compiled == pytest.approx(eager, rel=1e-4, abs=1e-6)


def test_a_trial_trains_with_compile_on(tmp_path, demo_cache):
    cfg = load_config("smoke", ["training.compile=true", "training.num_epochs=1", "training.max_train_steps=6",
                                "eval.n_test=1", "eval.n_train=0", "eval.max_steps=8", "data.demo_episodes=4",
                                f"data.cache_dir={demo_cache}", "logging.trackers=none",
                                "logging.stores=none"])
    summary = run_trial(cfg, TrialOptions(trial_id="c", run_dir=tmp_path / "c"))
    assert summary["status"] == "completed" and summary["global_step"] == 6
    row = json.loads((tmp_path / "c" / "logs.json.txt").read_text().splitlines()[0])
    assert math.isfinite(row["train_loss"]) and math.isfinite(row["test_mean_score"])
    assert "_orig_mod" not in "".join(torch.load(tmp_path / "c" / "checkpoints" / "latest.pt",
                                                 weights_only=False)["policy"])  # plain keys


def test_compile_must_be_a_boolean():
    with pytest.raises(ConfigError, match="training.compile"):
        load_config("smoke", ["training.compile=sometimes"])
