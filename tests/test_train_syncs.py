"""No host sync inside the training step: the loss and metrics reach the host only at log
points (every logging.every_steps steps and at the end of an epoch), through StepMetrics.flush."""
from __future__ import annotations

import json
import math
import os
import sys

import pytest
import torch

from imf.config import load_config
from imf.data import pool
from imf.train import stopping as step_metrics
from imf.train.trial import TrialOptions, run_trial

pytestmark = pytest.mark.slow  # trains


TORCH_DIR = os.path.dirname(torch.__file__)
SAMPLER = pool.__file__  # the loader's sampler permutes host index tensors: no device sync
SYNCS = ("item", "tolist", "cpu", "__bool__", "__float__", "numpy")


@pytest.mark.parametrize("objective", ["imf", "flow", "ddpm", "meanflow"])
def test_fifty_training_steps_make_no_host_sync_between_log_points(demo_cache, tmp_path, monkeypatch,
                                                                    objective):
    calls = {"step": 0, "flush": 0}
    in_epoch = {"on": False, "flushing": False}
    for name in SYNCS:
        real = getattr(torch.Tensor, name)

        def counted(self, *a, _real=real, **k):
            # torch's own reads of host tensors (AdamW's CPU step counter, the sampler's indices)
            # are not device syncs; every other caller in the step is counted
            caller = sys._getframe(1).f_code.co_filename
            if in_epoch["on"] and not in_epoch["flushing"] and not caller.startswith(TORCH_DIR) \
                    and caller != SAMPLER:
                calls["step"] += 1
            return _real(self, *a, **k)
        monkeypatch.setattr(torch.Tensor, name, counted)
    real_flush = step_metrics.StepMetrics.flush

    def flush(self):
        in_epoch["flushing"] = True
        try:
            losses = real_flush(self)
        finally:
            in_epoch["flushing"] = False
        calls["flush"] += bool(losses)  # a window with steps in it
        return losses
    monkeypatch.setattr(step_metrics.StepMetrics, "flush", flush)
    import imf.train.trial as trial_module
    real_epoch = trial_module.train_epoch

    def epoch(*args, **kwargs):
        in_epoch["on"] = True
        try:
            return real_epoch(*args, **kwargs)
        finally:
            in_epoch["on"] = False
    monkeypatch.setattr(trial_module, "train_epoch", epoch)

    cfg = load_config("smoke", ["training.max_train_steps=50", "training.batch_size=8", "training.num_epochs=1",
                                "eval.n_test=1", "eval.n_train=0", "eval.max_steps=8", "eval.n_workers=1",
                                "data.demo_episodes=4", f"data.cache_dir={demo_cache}", "logging.swanlab=false",
                                "logging.stores=none", "logging.every_steps=20", f"objective.name={objective}",
                                "objective.sample_steps=1"])
    summary = run_trial(cfg, TrialOptions(trial_id="s", run_dir=tmp_path / "s"))
    assert summary["status"] == "completed" and summary["global_step"] == 50
    assert calls["step"] == 0, f"{calls['step']} host syncs inside 50 training steps"
    assert calls["flush"] == 3  # steps 20 and 40, and the epoch's end (10 more)
    row = json.loads((tmp_path / "s" / "logs.json.txt").read_text().splitlines()[0])
    assert math.isfinite(row["train_loss"]) and math.isfinite(row["train_mse"])


def test_a_window_names_the_step_of_a_non_finite_loss():
    from imf.train.stopping import DivergenceDetector
    window, detector = step_metrics.StepMetrics(every=5), DivergenceDetector(10.0, warmup_steps=100)
    values = [1.0, 0.9, float("nan"), 0.8, 0.7]
    for v in values:
        window.add(torch.tensor(v), {"mse": torch.tensor(v)})
    losses = window.flush()
    assert losses[:2] == [1.0, pytest.approx(0.9)] and math.isnan(losses[2])
    assert [detector.update(v) for v in losses[:3]] == [False, False, True]
    assert "at step 3" in detector.reason
