"""How long a benchmark run trains: CPU-minutes on the cpu clock, or a fixed number of samples.

The cpu clock makes runs equal in CPU time, not in samples: the machine and the load beside a run
move the samples a CPU-second buys by a quarter or more (benchmarks/RUNS.md, "Image training
step: what it says"). A fixed number of samples is the same on any machine and under any load;
its runs still keep the cpu clock, which then only times them (train_s is CPU seconds).
"""
from __future__ import annotations

import sys

from imf.config import load_config
from imf.errors import ImfError


def sizing(script: str, preset: str, overrides: list[str], minutes: float | None, samples: float | None) -> list[str]:
    """The overrides that size a run of ``preset``: ``minutes`` on the cpu clock (None: the
    preset's own ``training.time_budget_s``, so a run of a preset trains as the preset ships), or
    with ``samples`` whole epochs of max_train_steps x batch_size nearest that many samples."""
    if samples is None and minutes is not None:
        return [f"training.time_budget_s={minutes * 60:g}", "training.budget_clock=cpu"]
    if samples is not None and samples <= 0:
        sys.exit(f"{script}: --samples {samples:g}: give a positive number of training samples, e.g. 6e5")
    try:
        training = load_config(preset, overrides).training
    except ImfError as exc:
        sys.exit(f"{script}: {exc}")
    if samples is None:
        if not training.time_budget_s:
            sys.exit(f"{script}: {preset} has no training.time_budget_s of its own; give --minutes or --samples")
        return [f"training.time_budget_s={training.time_budget_s:g}", "training.budget_clock=cpu"]
    if training.max_train_steps is None:
        sys.exit(f"{script}: --samples needs training.max_train_steps (the steps of an epoch) set in "
                 f"{preset} or the overrides; it is null")
    epochs = max(1, round(samples / (training.max_train_steps * training.batch_size)))
    return ["training.time_budget_s=null", "training.budget_clock=cpu", f"training.num_epochs={epochs}"]
