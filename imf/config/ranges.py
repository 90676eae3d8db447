"""The allowed range of every number a config holds, beside the schema (imf/config/schema.py).

Each numeric field of each section is listed once here (tests/test_config_ranges.py walks the
dataclasses and fails for a field without a range). A float must also be finite: nan and inf
are refused everywhere. An optional field (``int | None``) also takes null. A list of numbers
(``training.betas``) is checked item by item. Checked when a config is built, before a run
folder, a sweep folder or a data cache is touched.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    """``low`` <= x (< when ``low_open``), x <= ``high`` (< when ``high_open``); None: no bound."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    unit: str = ""  # said after the range: ">= 8 pixels"

    def holds(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def describe(self) -> str:
        """">= 1", "> 0", "in [0, 1)", "from 0 to 4294967295"."""
        unit = f" {self.unit}" if self.unit else ""
        if self.low is None and self.high is None:
            return f"any number{unit}"
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {_num(self.low)}{unit}"
        if self.low is None:
            return f"{'<' if self.high_open else '<='} {_num(self.high)}{unit}"
        if not self.low_open and not self.high_open and self.high - self.low > 1:
            return f"from {_num(self.low)} to {_num(self.high)}{unit}"
        return (f"in {'(' if self.low_open else '['}{_num(self.low)}, {_num(self.high)}"
                f"{')' if self.high_open else ']'}{unit}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


AT_LEAST_1 = Range(1)  # a count or a size
AT_LEAST_0 = Range(0)  # a count where 0 means none
POSITIVE = Range(0, low_open=True)  # a scale, a time, a threshold
FRACTION = Range(0, 1, high_open=True)  # a probability or share that cannot be all
UNIT = Range(0, 1)
SEED = Range(0, 2 ** 32 - 1)  # what numpy's legacy seeding takes

RANGES: dict[str, Range] = {
    # policy
    "policy.n_emb": AT_LEAST_1, "policy.n_layer": AT_LEAST_1, "policy.n_head": AT_LEAST_1,
    "policy.p_drop_emb": FRACTION, "policy.p_drop_attn": FRACTION,
    "policy.n_cond_layers": AT_LEAST_0,  # 0: the token-wise MLP
    "policy.horizon": AT_LEAST_1, "policy.n_obs_steps": AT_LEAST_1, "policy.n_action_steps": AT_LEAST_1,
    "policy.action_dim": AT_LEAST_1, "policy.encoder_width": AT_LEAST_1,
    "policy.image_feature_dim": AT_LEAST_1, "policy.num_keypoints": AT_LEAST_1,
    "policy.crop_shape": AT_LEAST_1, "policy.encoder_resolution": Range(8, unit="pixels"),
    "policy.time_scale": POSITIVE, "objective.noise_scale": POSITIVE,
    # objective
    "objective.sample_steps": AT_LEAST_1,
    # data
    "data.demo_episodes": AT_LEAST_1, "data.demo_seed": SEED, "data.val_ratio": FRACTION,
    "data.expert_noise": Range(0, unit="world units"), "data.expert_finish": Range(0, 1, low_open=True),
    "data.expert_pace": Range(0, 4, low_open=True),
    "data.split_seed": SEED, "data.max_train_episodes": AT_LEAST_1,
    # training
    "training.seed": SEED, "training.num_epochs": AT_LEAST_1, "training.batch_size": AT_LEAST_1,
    "training.early_batch_size": AT_LEAST_0, "training.early_batch_samples": AT_LEAST_0,
    "training.grad_accum": AT_LEAST_1,
    "training.lr": AT_LEAST_0,  # 0: the weights stay as they are (a baseline, a test of patience)
    "training.betas": FRACTION, "training.weight_decay": AT_LEAST_0,
    "training.encoder_weight_decay": AT_LEAST_0, "training.lr_warmup_steps": AT_LEAST_0,
    "training.grad_clip": POSITIVE,  # a norm; a negative one would ascend the gradient
    "training.ema_power": POSITIVE, "training.ema_max": UNIT,
    "training.rollout_every": AT_LEAST_1, "training.checkpoint_topk": AT_LEAST_0,
    "training.checkpoint_every": AT_LEAST_1, "training.snapshot_every": AT_LEAST_0,
    "training.patience": AT_LEAST_1,
    "training.divergence_factor": Range(1, low_open=True),  # x the running median: above 1
    "training.divergence_warmup_steps": AT_LEAST_0, "training.max_train_steps": AT_LEAST_1,
    "training.time_budget_s": POSITIVE, "training.max_val_steps": AT_LEAST_1,
    "training.val_probe_windows": AT_LEAST_0,
    # eval
    "eval.n_test": AT_LEAST_1, "eval.test_start_seed": SEED, "eval.n_train": AT_LEAST_0,
    "eval.train_start_seed": SEED, "eval.max_steps": AT_LEAST_1,
    "eval.n_workers": AT_LEAST_0,  # 0: one per core
    # logging
    "logging.every_steps": AT_LEAST_1,
    # sweep
    "sweep.retries": AT_LEAST_0, "sweep.stall_timeout": POSITIVE, "sweep.poll_interval": POSITIVE,
}
