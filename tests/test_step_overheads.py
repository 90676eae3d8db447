"""benchmarks/speed/step_overheads.py: each cell puts back the old way it names (and only that),
bad arguments get one line, and the table reads the JSON it wrote."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "speed" / "step_overheads.py"
sys.path.insert(0, str(SCRIPT.parent))

import step_overheads  # noqa: E402


@pytest.mark.parametrize("item_fetch, plain_adamw", [(True, True), (False, False), (True, False)])
def test_a_cell_trains_the_trials_loop_with_the_old_ways_it_names(item_fetch, plain_adamw, demo_cache, tmp_path):
    run, batch, parts = step_overheads.cell_timer(
        "pusht_lowdim_cpu", item_fetch, plain_adamw, tmp_path,
        ("data.demo_episodes=4", f"data.cache_dir={demo_cache}", "training.batch_size=8"))
    dataset = parts.train_loader.dataset
    assert isinstance(dataset, step_overheads.ItemByItem) is item_fetch
    assert hasattr(dataset, "__getitems__") is not item_fetch  # the old loader read items one by one
    assert bool(parts.optimizer.defaults["fused"]) is not plain_adamw
    assert parts.lr_schedule.optimizer is parts.optimizer  # the schedule drives the optimizer timed
    before = [p.detach().clone() for p in parts.policy.parameters()]
    threads = torch.get_num_threads()
    try:
        seconds = run(2)
    finally:
        torch.set_num_threads(threads)
    assert batch == 8 and seconds > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, parts.policy.parameters()))


@pytest.mark.parametrize("args, says", [
    (["--steps", "0"], "--steps 0 --rounds 5: both must be at least 1"),
    (["--presets", ","], "--presets ',': give preset names"),
    (["--presets", "nope", "--steps", "1", "--rounds", "1"], "unknown preset 'nope'"),
])
def test_bad_arguments_get_one_line_and_write_nothing(args, says, monkeypatch):
    before = step_overheads.OUT.read_bytes() if step_overheads.OUT.exists() else None
    monkeypatch.setattr(sys, "argv", ["step_overheads.py", *args, "--no-write"])
    threads = torch.get_num_threads()
    try:
        with pytest.raises(SystemExit) as done:
            step_overheads.main()
    finally:
        torch.set_num_threads(threads)
    message = str(done.value.code)
    assert message.startswith("step_overheads.py: ") and says in message and "\n" not in message
    assert (step_overheads.OUT.read_bytes() if step_overheads.OUT.exists() else None) == before


def test_the_table_gives_each_loop_against_the_old_one():
    cells = [{"cell": name, "item_fetch": item, "plain_adamw": plain, "cpu_s_per_step": ms / 1000,
              "samples_per_cpu_s": 64000 / ms, "ratio_to_old": 37.1 / ms}
             for (name, item, plain), ms in zip(step_overheads.CELLS, [37.1, 33.5, 34.9, 32.7])]
    run = {"steps": 40, "rounds": 5, "presets": [{"preset": "pusht_lowdim_cpu", "batch": 64, "cells": cells}],
           "machine": {"when": "2026-12-06 21:30 UTC", "arch": "x86_64", "torch": "2.13.0", "cores": 2,
                       "load_start": 1.0, "load_end": 1.5}}
    lines = step_overheads.render(run)
    assert lines[0] == step_overheads.SECTION
    assert "--presets pusht_lowdim_cpu --steps 40 --rounds 5" in lines[2]
    assert lines[-1] == "| pusht_lowdim_cpu | batch fetch, fused AdamW (the trial now) | 32.7 | 1,957 | 1.13x |"
    assert lines[-4].endswith("| 37.1 | 1,725 | 1.00x |")


def test_interleaved_medians_warm_each_up_then_alternate_the_order_and_keep_the_median():
    sys.path.insert(0, str(ROOT / "benchmarks" / "common"))
    from epoch_timer import interleaved_medians

    calls, seconds = [], {"a": iter([9.0, 1.0, 5.0, 3.0]), "b": iter([9.0, 2.0, 2.0, 8.0])}

    def timer(name):
        def run(steps):
            calls.append((name, steps))
            return next(seconds[name])
        return run

    assert interleaved_medians([timer("a"), timer("b")], steps=7, rounds=3) == [3.0, 2.0]
    assert [name for name, _ in calls] == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-ups, then a b | b a | a b
    assert {steps for _, steps in calls} == {7}
