"""What the mission's grid costs: the image preset's training step at its sizes, and the hours.

    python benchmarks/speed/grid_cost.py [--cells 128,256,384x6,12,18] [--steps 2] [--passes 2]
                                   [--epochs 350] [--queues 3] [--no-write]
    python benchmarks/speed/grid_cost.py --render     # count the epochs' steps again, rewrite the
                                                # JSON and RESULTS.md from its timed steps

One training step = loss + backward + AdamW of the policy `imf sweep` would build: causal is
`pusht_image_imf` (n_head 4), full is `pusht_image_imf_fullattn` (n_head 1: the full sweep's
preset), each at its batch (64) and horizon (10), ResNet-18 encoder on two 84x84 crops a sample,
random inputs of the loader's shapes. One torch thread, the CPU clock of this process (a shared
machine's load slows the wall clock more than the CPU clock). Each pass visits the cells in
turn (the order reversed every other pass), builds both masks' policies, warms each up by one
step and then times causal and full one step at a time, alternating; the median of every timed
step of a (mask, cell) over the passes is kept. Keeping all 18 policies alive for a finer
interleave would take ~8 GB, more than this shared machine can spare.

Steps an epoch come from the preset's data as a trial would read it (its demo episodes, split
and max_train_episodes, windows of its horizon and pads, drop_last off), from the cached
scripted set. Hours a trial = step x steps an epoch x epochs: training only (validation's
forward passes, the rollouts every 50 epochs and the final eval are not in it). The makespan
places the 9 trials of each sweep on --queues equal queues with the sweep's own planner.
The linear check: `imf sweep --dry-run --estimate` times only the smallest and largest trial
and puts the others on the line between them in n_layer x n_emb^2; the JSON says how far that
line is from each measured cell.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

from imf.config import load_config  # noqa: E402
from imf.data import KEYPOINT_OBS_DIM, MinMaxNormalizer, WindowSampler, read_episode_ends, train_mask  # noqa: E402
from imf.model import attention_masks  # noqa: E402
from imf.policy import ImfPolicy  # noqa: E402
from imf.pusht import cached_sizes, demo_dataset_path, ensure_demo_dataset  # noqa: E402
from imf.sweep import assign, epoch_settings  # noqa: E402

SECTION = "## The mission's grid, per step and per trial (benchmarks/speed/grid_cost.py)"
JSON = Path(__file__).resolve().parents[1] / "grid_cost.json"
PRESETS = {"causal": "pusht_image_imf", "full": "pusht_image_imf_fullattn"}


def config_of(mask: str, n_emb: int, n_layer: int):
    return load_config(PRESETS[mask], [f"policy.n_emb={n_emb}", f"policy.n_layer={n_layer}"])


def steps_per_epoch(cfg) -> dict:
    """Training windows and optimizer steps an epoch of ``cfg``'s scripted demo data. The first
    N episodes of a larger cached set of the same seed are the same episodes (imf.pusht.expert),
    so a cached 500 serves a preset of 200; with none cached the set is made (minutes)."""
    d, p = cfg.data, cfg.policy
    larger = [n for n in cached_sizes(d.demo_seed, d.cache_dir) if n >= d.demo_episodes]
    path = (demo_dataset_path(larger[0], d.demo_seed, d.cache_dir) if larger
            else ensure_demo_dataset(d.demo_episodes, d.demo_seed, d.cache_dir))
    ends = read_episode_ends(path)[:d.demo_episodes]
    mask = train_mask(len(ends), d.val_ratio, d.split_seed, d.max_train_episodes)
    windows = len(WindowSampler(ends, p.horizon, pad_before=p.n_obs_steps - 1,
                                pad_after=p.n_action_steps - 1, episode_mask=mask))
    steps = math.ceil(windows / cfg.training.batch_size)  # the loader keeps the last short batch
    if cfg.training.max_train_steps:
        steps = min(steps, cfg.training.max_train_steps)
    # settings: what `imf sweep --dry-run --estimate` matches a trial's config against
    return {"episodes": len(ends), "train_episodes": int(mask.sum()), "windows": windows,
            "batch": cfg.training.batch_size, "steps": steps, "source": path.name,
            "settings": epoch_settings(cfg)}


def training_step(cfg):
    """A closure doing one step of ``cfg``'s policy on a fixed random batch of the loader's shapes."""
    torch.manual_seed(0)
    p, batch = cfg.policy, cfg.training.batch_size
    norm = MinMaxNormalizer()
    for key, dim in (("action", 2), ("agent_pos", 2), ("keypoints", KEYPOINT_OBS_DIM)):
        norm.set_identity_range(key, 0.0, 512.0, dim)
    policy = ImfPolicy(cfg, norm, masks=attention_masks(p))
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.training.lr, weight_decay=cfg.training.weight_decay)
    data = {"obs": {"image": torch.rand(batch, p.n_obs_steps, 3, 96, 96),
                    "agent_pos": torch.rand(batch, p.n_obs_steps, 2) * 512},
            "action": torch.rand(batch, p.horizon, 2) * 512}

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss, _ = policy.compute_loss(data)
        loss.backward()
        opt.step()
    params = sum(t.numel() for t in policy.parameters())
    return step, params


def measure(cells: list[tuple[int, int]], steps: int, passes: int) -> dict:
    """(mask, cell) -> CPU and wall seconds of every timed step, and the parameter count."""
    out: dict = {}
    for done in range(passes):
        for n_emb, n_layer in (cells if done % 2 == 0 else cells[::-1]):
            built = {mask: training_step(config_of(mask, n_emb, n_layer)) for mask in PRESETS}
            for step, _ in built.values():
                step()  # the allocator's first step
            for _ in range(steps):
                for mask, (step, params) in built.items():
                    c0, w0 = time.process_time(), time.perf_counter()
                    step()
                    row = out.setdefault(f"{mask} {n_emb}x{n_layer}", {"cpu": [], "wall": [], "params": params})
                    row["cpu"].append(time.process_time() - c0)
                    row["wall"].append(time.perf_counter() - w0)
            del built
            print(f"pass {done + 1}/{passes} {n_emb}x{n_layer}: " + ", ".join(
                f"{m} {statistics.median(out[f'{m} {n_emb}x{n_layer}']['cpu']):.2f} s" for m in PRESETS),
                flush=True)
    return out


def _size(cell: str) -> float:
    n_emb, n_layer = (int(v) for v in cell.split("x"))
    return n_layer * n_emb ** 2 / 1e6


def estimate(timed: dict, spe: dict, epochs: int, queues: int) -> dict:
    """Hours a trial, each sweep's makespan on ``queues`` equal queues, and the line's error."""
    sweeps = {}
    for mask in PRESETS:
        cells = {k.split(" ")[1]: statistics.median(v["cpu"]) for k, v in timed.items() if k.startswith(mask + " ")}
        hours = {cell: s * spe[mask]["steps"] * epochs / 3600 for cell, s in cells.items()}
        order = assign(hours, {f"q{i}": 1.0 for i in range(queues)})
        loads = [sum(hours[c] for c in ids) for ids in order.values()]
        lo, hi = min(cells, key=_size), max(cells, key=_size)
        slope = (cells[hi] - cells[lo]) / (_size(hi) - _size(lo)) if _size(hi) != _size(lo) else 0.0
        line = {c: (cells[lo] + slope * (_size(c) - _size(lo))) / cells[c] - 1 for c in cells}
        sweeps[mask] = {"step_s": cells, "hours": hours, "total_h": sum(hours.values()),
                        "makespan_h": max(loads), "queue_h": sorted(loads, reverse=True),
                        "line_error": line}
    return sweeps


def render(result: dict) -> str:
    m, spe = result["machine"], result["steps_per_epoch"]
    cells = list(result["sweeps"]["causal"]["step_s"])
    lines = [SECTION, "",
             f"Measured {m['when']} on {m['arch']}, torch {m['torch']}, 1 torch thread, {m['cores']} cores, load "
             f"average {m['load_start']:.1f} at the start and {m['load_end']:.1f} at the end (other runs shared the "
             f"cores: CPU clock of the process, not wall). Command: `python benchmarks/speed/grid_cost.py` "
             f"({result['passes']} passes x {result['steps']} timed steps a mask and cell, after one warm-up step; "
             "median). JSON: benchmarks/grid_cost.json.", "",
             f"Steps an epoch (the preset's data: {spe['causal']['episodes']} scripted episodes, "
             f"{spe['causal']['train_episodes']} for training, {spe['causal']['windows']:,} windows, batch "
             f"{spe['causal']['batch']}): {spe['causal']['steps']}; {result['epochs']} epochs. Hours = CPU step x "
             "steps x epochs, training only (no validation, rollouts or final eval).", "",
             "| n_emb x n_layer | params causal / full | causal step | full step | full / causal | causal h/trial "
             "| full h/trial |", "|---|---|---|---|---|---|---|"]
    causal, full = result["sweeps"]["causal"], result["sweeps"]["full"]
    for cell in cells:
        pc, pf = result["timed"][f"causal {cell}"]["params"], result["timed"][f"full {cell}"]["params"]
        lines.append(f"| {cell} | {pc / 1e6:.1f}M / {pf / 1e6:.1f}M | {causal['step_s'][cell]:.2f} s | "
                     f"{full['step_s'][cell]:.2f} s | {full['step_s'][cell] / causal['step_s'][cell]:.2f} | "
                     f"{causal['hours'][cell]:,.0f} | {full['hours'][cell]:,.0f} |")
    q = result["queues"]
    wall = [statistics.median(v["wall"]) / statistics.median(v["cpu"]) for v in result["timed"].values()]
    both = causal["makespan_h"] + full["makespan_h"]
    lines += ["", f"The wall clock of a step was {min(wall):.1f} to {max(wall):.1f} times its CPU clock under this load "
              "(medians per cell); the hours use the CPU clock, a core's own time. On "
              f"{q} one-thread CPU queues of this machine (the sweep's planner, longest first): causal "
              f"{causal['total_h']:,.0f} trial-hours, makespan {causal['makespan_h']:,.0f} h "
              f"({causal['makespan_h'] / 24:.0f} days); full {full['total_h']:,.0f} trial-hours, makespan "
              f"{full['makespan_h']:,.0f} h ({full['makespan_h'] / 24:.0f} days); both, one after the other on "
              f"those queues (examples/seed_sweep.sh), {both:,.0f} h ({both / 24:.0f} days).",
              "GPU: not measured. No GPU was lent to the session that ran this, and no GPU rate is in this file "
              "(gpu_check.sh's section would hold one), so no GPU hours are given; the CPU figures above are "
              "the only measurement (gpu_check.sh on a GPU measures the reference preset's samples/s).",
              "`imf sweep --dry-run --estimate` puts the grid's middle cells on the line through the smallest "
              "and largest cell in n_layer x n_emb^2; against these measurements that line's step is off by "
              + ", ".join(f"{mask} {min(e.values()) * 100:+.0f}% to {max(e.values()) * 100:+.0f}%"
                          for mask, e in ((m, result['sweeps'][m]['line_error']) for m in PRESETS))
              + " (the line's over the measured, per cell in the JSON). Its wall-clock figures, with the slots' "
              "thread counts, for the full sweep: `imf sweep --mask full --grid 128,256,384x6,12,18 --epochs 350 "
              "policy.n_head=1 --queue local:cpu --queue local:cpu --queue local:cpu --dry-run --estimate`."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="128,256,384x6,12,18")
    parser.add_argument("--steps", type=int, default=2, help="timed steps of each mask and cell a pass")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=350)
    parser.add_argument("--queues", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--render", action="store_true",
                        help="keep grid_cost.json's timed steps; count the epochs' steps again, rewrite the rest")
    args = parser.parse_args()
    torch.set_num_threads(1)
    embs, layers = args.cells.split("x")
    cells = [(int(e), int(n)) for e in embs.split(",") for n in layers.split(",")]
    spe = {mask: steps_per_epoch(config_of(mask, *cells[0])) for mask in PRESETS}
    if args.render:  # the timing is kept; the steps an epoch and everything after are redone
        result = json.loads(JSON.read_text())
        result.update(steps_per_epoch=spe, sweeps=estimate(result["timed"], spe, result["epochs"], result["queues"]))
    else:
        load_start = os.getloadavg()[0]
        timed = measure(cells, args.steps, args.passes)
        result = {"machine": {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "arch": platform.machine(), "torch": torch.__version__, "cores": os.cpu_count(),
                              "load_start": load_start, "load_end": os.getloadavg()[0]},
                  "steps": args.steps, "passes": args.passes, "epochs": args.epochs, "queues": args.queues,
                  "steps_per_epoch": spe, "timed": timed,
                  "sweeps": estimate(timed, spe, args.epochs, args.queues), "gpu": None}
    text = render(result)
    print(text)
    if not args.no_write:
        JSON.write_text(json.dumps(result, indent=1) + "\n")
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
