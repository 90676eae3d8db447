"""What an iMF training step costs against a flow step, per objective option.

    python benchmarks/imf_step.py [--cells 128x6,256x6] [--batch 128] [--reps 5] [--no-write]

The transformer alone (the keypoint condition: no encoder), one step = loss + backward + AdamW,
on a fixed batch; every variant of a cell is timed in the same round, rounds interleaved, and
the median of the rounds kept, so load on a shared machine hits all of them alike. Variants:
flow; imf with the boundary tangent at r = t shares 0.5 and 0.75; imf with the v-head tangent
at the same shares. The issue's goal is imf <= 1.3x flow at 128x6 and 256x6.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
import torch
from results_file import write_section

from imf.config import load_config
from imf.data.normalizer import MinMaxNormalizer
from imf.policy import ImfPolicy
from imf.registry.options import fill_options

SECTION = "## iMF step against a flow step (benchmarks/imf_step.py)"
VARIANTS = {
    "flow": ["objective.name=flow"],
    "imf boundary, r=t 0.5": ["objective.options.equal_time_ratio=0.5"],
    "imf boundary, r=t 0.75": ["objective.options.equal_time_ratio=0.75"],
    "imf v-head, r=t 0.5": ["objective.options.tangent=v_head", "objective.options.equal_time_ratio=0.5"],
    "imf v-head, r=t 0.75": ["objective.options.tangent=v_head", "objective.options.equal_time_ratio=0.75"],
}


def make_step(n_emb: int, n_layer: int, overrides: list[str], batch: int):
    torch.manual_seed(0)
    cfg = load_config("pusht_lowdim_imf", [f"policy.n_emb={n_emb}", f"policy.n_layer={n_layer}",
                                           "policy.p_drop_attn=0", *overrides])
    fill_options(cfg)
    norm = MinMaxNormalizer()
    rng = np.random.default_rng(0)
    norm.fit("action", rng.uniform(0, 512, (100, 2)))
    norm.fit("keypoints", rng.uniform(0, 512, (100, 20)))
    h = cfg.policy.horizon
    data = {"obs": {"keypoints": torch.rand(batch, h, 20) * 512, "agent_pos": torch.rand(batch, h, 2) * 512},
            "action": torch.rand(batch, h, 2) * 512}
    return training_step(ImfPolicy(cfg, norm), data)


def training_step(policy: ImfPolicy, data: dict):
    """One step on a fixed batch, as a closure: loss, backward, AdamW."""
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-4)

    def step() -> None:
        loss, _ = policy.compute_loss(data)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def measure(cells: list[tuple[int, int]], batch: int, reps: int, n: int = 5) -> dict:
    results = {}
    for n_emb, n_layer in cells:
        steps = {name: make_step(n_emb, n_layer, ov, batch) for name, ov in VARIANTS.items()}
        for step in steps.values():
            step()  # warm-up
        times: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(reps):
            for name, step in steps.items():
                t0 = time.perf_counter()
                for _ in range(n):
                    step()
                times[name].append((time.perf_counter() - t0) / n)
        results[(n_emb, n_layer)] = {name: statistics.median(v) for name, v in times.items()}
        print(n_emb, n_layer, {k: f"{v * 1e3:.1f} ms" for k, v in results[(n_emb, n_layer)].items()}, flush=True)
    return results


def render(results: dict, batch: int, reps: int) -> str:
    load = os.getloadavg()[0]
    lines = [SECTION, "", f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"torch {torch.__version__}, {torch.get_num_threads()} thread, batch {batch}, horizon 16; median of "
             f"{reps} interleaved rounds of 5 steps; load average {load:.1f} at the end (other runs shared the 2 "
             "cores, so the ratios, measured in the same rounds, are the figures to read).", "",
             "| cell | variant | ms per step | samples/s | x flow |", "|---|---|---|---|---|"]
    for (n_emb, n_layer), times in results.items():
        for name, t in times.items():
            lines.append(f"| {n_emb}x{n_layer} | {name} | {t * 1e3:.1f} | {batch / t:,.0f} | {t / times['flow']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="128x6,256x6")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cells = [tuple(int(v) for v in c.split("x")) for c in args.cells.split(",")]
    text = render(measure(cells, args.batch, args.reps), args.batch, args.reps)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
