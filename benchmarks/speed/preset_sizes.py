"""Training samples a CPU-second of a preset's own loop at other model sizes, measured in one run.

    python benchmarks/speed/preset_sizes.py [--preset pusht_lowdim_cpu] [--cells 32x2,64x2,128x2,128x1,64x2@128]
                                     [--steps 40] [--rounds 5] [--no-write]
    python benchmarks/speed/preset_sizes.py --render   # RUNS.md's section again from the JSON

Each cell is the preset with ``policy.n_emb`` x ``policy.n_layer`` (and, after an @, its
``training.batch_size``) changed and nothing else, trained
through the trial's own epoch loop (imf.train.trial.train_epoch: loader, loss, backward, clip,
AdamW, schedule, EMA), so what a budget on the cpu clock buys is what is timed. One torch
thread, the CPU clock of this process; the cells are timed in turn, round by round (the order
reversed every other round), after a warm-up epoch each, and the median round kept, so load
from other work on a shared machine hits every cell alike. The ratio to the preset's own size
is the figure to read: the samples a CPU-second move with the machine.

Writes benchmarks/preset_sizes_<preset>.json and its section of benchmarks/RUNS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from epoch_timer import add_timing_arguments, interleaved_medians, timed_epoch  # noqa: E402
from results_file import RUNS, write_section  # noqa: E402

from imf.config import load_config  # noqa: E402
from imf.errors import ConfigError  # noqa: E402
from imf.store import RunLayout  # noqa: E402
from imf.train import TrainState, build_parts  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def section(preset: str, tag: str | None = None) -> str:
    what = f"at other sizes, {tag}" if tag else "at other sizes"
    return f"## Training samples a CPU-second of {preset} {what} (benchmarks/speed/preset_sizes.py)"


def out_path(preset: str, tag: str | None = None) -> Path:
    """The JSON of one measurement: a ``tag`` keeps a later one beside it (the figures an earlier
    one gave stay where they were quoted from)."""
    return ROOT / "benchmarks" / f"preset_sizes_{preset}{'_' + tag if tag else ''}.json"


def size_timer(preset: str, n_emb: int, n_layer: int, batch: int | None, folder: Path):
    """(a callable training ``steps`` steps of the preset at this size (and ``batch``, None: the
    preset's own) and returning its CPU seconds, the batch, the parameter count)."""
    cfg = load_config(preset, [f"policy.n_emb={n_emb}", f"policy.n_layer={n_layer}", "logging.trackers=none",
                               "training.time_budget_s=null", "training.max_train_steps=null",
                               *([f"training.batch_size={batch}"] if batch else [])])
    parts = build_parts(cfg, RunLayout(folder), torch.device("cpu"), None, lambda line: None, "speed")
    state = TrainState()

    def run(steps: int) -> float:
        return timed_epoch(cfg, parts, state, steps, time.process_time)
    params = sum(p.numel() for p in parts.policy.parameters())
    return run, cfg.training.batch_size, params


Cell = tuple[int, int, int | None]  # n_emb, n_layer, batch (None: the preset's own)


def measure(preset: str, cells: list[Cell], steps: int, rounds: int) -> dict:
    own = load_config(preset, []).policy
    if (own.n_emb, own.n_layer, None) not in cells:
        cells = [(own.n_emb, own.n_layer, None), *cells]  # the ratios are to the preset's own size and batch
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        timers = {cell: size_timer(preset, *cell, Path(tmp) / label(*cell)) for cell in cells}
        medians = dict(zip(cells, interleaved_medians([timers[cell][0] for cell in cells], steps, rounds)))
    rows = []
    for cell in cells:
        _, batch, params = timers[cell]
        rows.append({"n_emb": cell[0], "n_layer": cell[1], "params": params, "batch": batch,
                     "cpu_s_per_step": medians[cell] / steps, "samples_per_cpu_s": steps * batch / medians[cell]})
    base = rows[cells.index((own.n_emb, own.n_layer, None))]
    for row in rows:
        row["ratio_to_preset"] = row["samples_per_cpu_s"] / base["samples_per_cpu_s"]
    return {"preset": preset, "own_size": [own.n_emb, own.n_layer], "steps": steps, "rounds": rounds,
            "machine": {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                        "arch": platform.machine(), "torch": torch.__version__, "cores": os.cpu_count(),
                        "load_start": load_start, "load_end": os.getloadavg()[0]},
            "cells": rows}


def label(n_emb: int, n_layer: int, batch: int | None = None) -> str:
    return f"{n_emb}x{n_layer}" + (f"@{batch}" if batch else "")


def cell_labels(run: dict) -> list[str]:
    """Each row's cell as --cells takes it: the batch after an @ where it is not the preset's own
    (the batch of the row at the preset's own size with the ratio 1)."""
    own = next(r["batch"] for r in run["cells"] if [r["n_emb"], r["n_layer"]] == run["own_size"]
               and r["ratio_to_preset"] == 1.0)
    return [label(r["n_emb"], r["n_layer"], None if r["batch"] == own else r["batch"]) for r in run["cells"]]


def render(run: dict) -> list[str]:
    m = run["machine"]
    labels = cell_labels(run)
    cells = ",".join(labels)
    tag = run.get("tag")  # absent in a measurement without one
    lines = [section(run["preset"], tag), "",
             f"`python benchmarks/speed/preset_sizes.py --preset {run['preset']} --cells {cells} --steps {run['steps']} "
             f"--rounds {run['rounds']}{' --tag ' + tag if tag else ''}` on {m['arch']}, {m['cores']} cores, "
             f"torch {m['torch']}, {m['when']}; 1 torch thread, the CPU clock of the process; {run['steps']} steps of "
             f"the trial's epoch loop a cell a round, the median of {run['rounds']} interleaved rounds (load "
             f"{m['load_start']:.1f} at the start, {m['load_end']:.1f} at the end: the ratios are the figures to "
             f"read). The preset's own size is {run['own_size'][0]} x {run['own_size'][1]}. JSON: "
             f"benchmarks/{out_path(run['preset'], tag).name}.", "",
             "| n_emb x n_layer (@ batch) | parameters | CPU ms a step | samples / CPU-s | against the preset's size |",
             "|---|---|---|---|---|"]
    for name, row in zip(labels, run["cells"]):
        lines.append(f"| {name} | {row['params']:,} | {1000 * row['cpu_s_per_step']:.1f} | "
                     f"{row['samples_per_cpu_s']:,.0f} | {row['ratio_to_preset']:.2f}x |")
    return lines


def parse_cells(text: str) -> list[Cell]:
    cells = []
    try:
        for cell in text.split(","):
            size, _, batch = cell.partition("@")
            cells.append((*(int(v) for v in size.split("x")), int(batch) if batch else None))
    except ValueError:
        cells = []
    if not cells or any(len(c) != 3 or min(v for v in c if v is not None) < 1 for c in cells):
        sys.exit(f"preset_sizes.py: --cells {text!r}: give n_embxn_layer pairs, each with an optional @batch, "
                 f"comma-separated (e.g. 64x2,128x2,64x2@128)")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="pusht_lowdim_cpu")
    parser.add_argument("--cells", default="32x2,64x2,128x2,128x1")
    parser.add_argument("--tag", default=None, help="a name for this measurement: its own JSON and RUNS section")
    add_timing_arguments(parser)
    args = parser.parse_args()
    if args.render:
        write_section(section(args.preset, args.tag), render(json.loads(out_path(args.preset, args.tag).read_text())), RUNS)
        return
    if args.tag is not None and not re.fullmatch(r"[a-z0-9_]+", args.tag):
        sys.exit(f"preset_sizes.py: --tag {args.tag!r}: give lower-case letters, digits and _ (it names a file)")
    cells = parse_cells(args.cells)
    if args.steps < 1 or args.rounds < 1:
        sys.exit(f"preset_sizes.py: --steps {args.steps} --rounds {args.rounds}: both must be at least 1")
    torch.set_num_threads(1)
    try:
        run = measure(args.preset, cells, args.steps, args.rounds) | ({"tag": args.tag} if args.tag else {})
    except ConfigError as exc:
        sys.exit(f"preset_sizes.py: {exc}")
    text = render(run)
    print("\n".join(text))
    if not args.no_write:
        out_path(args.preset, args.tag).write_text(json.dumps(run, indent=1) + "\n")
        write_section(section(args.preset, args.tag), text, RUNS)


if __name__ == "__main__":
    main()
