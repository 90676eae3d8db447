"""The training step's overheads, before and after: the trial's epoch loop with its batch fetched
item by item or in one gather, and its AdamW one tensor at a time or fused, measured in one run.

    python benchmarks/speed/step_overheads.py [--presets pusht_lowdim_cpu,pusht_image_cpu]
                                              [--steps 40] [--rounds 5] [--no-write]
    python benchmarks/speed/step_overheads.py --render   # RUNS.md's section again from the JSON

Each cell is the preset's own loop (imf.train.trial.train_epoch: loader, loss, backward, clip,
AdamW, schedule, EMA) with one or both of the old ways put back in this process:
- ``item fetch``: the data set behind a view that offers only ``__getitem__``, so the loader
  reads a batch's windows one by one, as it did before ``ReplayWindows.__getitems__``;
- ``plain AdamW``: torch's AdamW without ``fused`` (on a CPU, one tensor at a time), as the
  trial built it before ``imf.train.parts.make_optimizer``.
One torch thread, the CPU clock of this process; the cells of a preset are timed in turn, round by
round (the order reversed every other round), after a warm-up epoch each, and the median round
kept, so load from other work hits every cell alike: the ratio to the old loop is the figure.

Writes benchmarks/step_overheads.json and its section of benchmarks/RUNS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
from torch.utils.data import Dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from epoch_timer import add_timing_arguments, interleaved_medians, timed_epoch  # noqa: E402
from results_file import RUNS, write_section  # noqa: E402

from imf.config import load_config  # noqa: E402
from imf.errors import ConfigError  # noqa: E402
from imf.store import RunLayout  # noqa: E402
from imf.train import TrainState, build_parts, make_loader  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "step_overheads.json"
SECTION = "## Training step overheads (benchmarks/speed/step_overheads.py)"
CELLS = [("item fetch, plain AdamW", True, True), ("item fetch, fused AdamW", True, False),
         ("batch fetch, plain AdamW", False, True), ("batch fetch, fused AdamW (the trial now)", False, False)]


class ItemByItem(Dataset):
    """The data set with ``__getitems__`` hidden: the loader falls back to one read an item."""

    def __init__(self, windows: Dataset) -> None:
        self.windows = windows

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, index: int):
        return self.windows[index]


def cell_timer(preset: str, item_fetch: bool, plain_adamw: bool, folder: Path, overrides: tuple[str, ...] = ()):
    """(a callable training ``steps`` steps of the cell's loop and returning its CPU seconds, the
    batch, the parts it trains)."""
    cfg = load_config(preset, ["logging.trackers=none", "training.time_budget_s=null", "training.max_train_steps=null",
                               *overrides])
    parts = build_parts(cfg, RunLayout(folder), torch.device("cpu"), None, lambda line: None, "speed")
    t = cfg.training
    if item_fetch:
        parts.train_loader = make_loader(ItemByItem(parts.train_loader.dataset), cfg, shuffle=True,
                                         generator=parts.shuffle)
    if plain_adamw:
        parts.optimizer = torch.optim.AdamW(parts.policy.optimizer_groups(t), lr=t.lr, betas=tuple(t.betas))
        parts.lr_schedule = torch.optim.lr_scheduler.LambdaLR(parts.optimizer, parts.lr_schedule.lr_lambdas[0])
    state = TrainState()
    return lambda steps: timed_epoch(cfg, parts, state, steps, time.process_time), t.batch_size, parts


def measure(presets: list[str], steps: int, rounds: int) -> dict:
    load_start = os.getloadavg()[0]
    out = []
    for preset in presets:
        with tempfile.TemporaryDirectory() as tmp:
            timers = [cell_timer(preset, item, plain, Path(tmp) / str(i)) for i, (_, item, plain) in enumerate(CELLS)]
            medians = interleaved_medians([run for run, *_ in timers], steps, rounds)
        batch = timers[0][1]
        rows = [{"cell": name, "item_fetch": item, "plain_adamw": plain,
                 "cpu_s_per_step": median / steps, "samples_per_cpu_s": steps * batch / median}
                for (name, item, plain), median in zip(CELLS, medians)]
        for row in rows:
            row["ratio_to_old"] = row["samples_per_cpu_s"] / rows[0]["samples_per_cpu_s"]
        out.append({"preset": preset, "batch": batch, "cells": rows})
    return {"steps": steps, "rounds": rounds, "presets": out,
            "machine": {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "arch": platform.machine(),
                        "torch": torch.__version__, "cores": os.cpu_count(),
                        "load_start": load_start, "load_end": os.getloadavg()[0]}}


def render(run: dict) -> list[str]:
    m = run["machine"]
    presets = ",".join(p["preset"] for p in run["presets"])
    lines = [SECTION, "",
             f"`python benchmarks/speed/step_overheads.py --presets {presets} --steps {run['steps']} --rounds "
             f"{run['rounds']}` on {m['arch']}, {m['cores']} cores, torch {m['torch']}, {m['when']}; 1 torch thread, "
             f"the CPU clock of the process; {run['steps']} steps of the trial's epoch loop a cell a round, the median "
             f"of {run['rounds']} interleaved rounds (load {m['load_start']:.1f} at the start, {m['load_end']:.1f} at "
             f"the end: the ratios are the figures to read). JSON: benchmarks/step_overheads.json.", "",
             "| preset | loop | CPU ms a step | samples / CPU-s | against the old loop |", "|---|---|---|---|---|"]
    for p in run["presets"]:
        for row in p["cells"]:
            lines.append(f"| {p['preset']} | {row['cell']} | {1000 * row['cpu_s_per_step']:.1f} | "
                         f"{row['samples_per_cpu_s']:,.0f} | {row['ratio_to_old']:.2f}x |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="pusht_lowdim_cpu,pusht_image_cpu")
    add_timing_arguments(parser)
    args = parser.parse_args()
    if args.render:
        write_section(SECTION, render(json.loads(OUT.read_text())), RUNS)
        return
    if args.steps < 1 or args.rounds < 1:
        sys.exit(f"step_overheads.py: --steps {args.steps} --rounds {args.rounds}: both must be at least 1")
    presets = [p for p in args.presets.split(",") if p]
    if not presets:
        sys.exit(f"step_overheads.py: --presets {args.presets!r}: give preset names, comma-separated")
    torch.set_num_threads(1)
    try:
        run = measure(presets, args.steps, args.rounds)
    except ConfigError as exc:
        sys.exit(f"step_overheads.py: {exc}")
    print("\n".join(render(run)[4:]))
    if not args.no_write:
        OUT.write_text(json.dumps(run, indent=2) + "\n")
        write_section(SECTION, render(run), RUNS)


if __name__ == "__main__":
    main()
