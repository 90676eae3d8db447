"""What one training step of the image preset costs, per variant, on the cpu clock.

    python benchmarks/speed/image_step.py [--reps 7] [--no-write]   # RESULTS.md and learning_results/image_step.json

The whole step of `pusht_image_cpu` (random crop, encoder, iMF loss, backward, AdamW) on a fixed
batch of 64; the variants are timed in the same rounds, interleaved, in CPU seconds of this
process (one torch thread: the clock the training budget runs on), the median of the rounds
kept, so load from other work hits all of them alike. Variants: the shipped step; the same with
the random crop gathered with one index per pixel (how imf cropped before 2026-12-02; kept here
only as the reference the ratio is measured against); and the image ablations whose step costs
differ (benchmarks/learning/ablation.py: `policy.encoder_resolution=64`, `policy.crop_shape=76`,
`objective.options.equal_time_ratio=0.75`, `training.batch_size=128`), and the flow and ddpm
objectives on the same policy (the equal-compute comparison of benchmarks/learning/learning.py): their CPU
a sample against the shipped step's, measured in the same rounds. An ablation run's samples per CPU-second against
its baseline's, read beside this ratio, say how much the load on the shared cores moved it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from imf_step import training_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

import imf.model.encoder as encoder  # noqa: E402
from imf.config import load_config  # noqa: E402
from imf.data import MinMaxNormalizer  # noqa: E402
from imf.policy import ImfPolicy  # noqa: E402
from imf.registry import fill_options  # noqa: E402

SECTION = "## Image training step (benchmarks/speed/image_step.py)"
RESULTS = Path(__file__).resolve().parents[1] / "learning_results"  # image_step.json: what claims.py reads
BATCH = 64


def gather_crop(x: torch.Tensor, size: int, random: bool) -> torch.Tensor:
    """The crop before: an index tensor per pixel (the same windows as the shipped crop)."""
    n, c, hgt, wid = x.shape
    if not random or size >= hgt:
        return SHIPPED_CROP(x, size, random)
    top = torch.randint(0, hgt - size + 1, (n,))
    left = torch.randint(0, wid - size + 1, (n,))
    offs = torch.arange(size)
    rows = (top[:, None] + offs)[:, None, :, None]  # (N, 1, size, 1)
    cols = (left[:, None] + offs)[:, None, None, :]  # (N, 1, 1, size)
    return x[torch.arange(n)[:, None, None, None], torch.arange(c)[None, :, None, None], rows, cols]


SHIPPED_CROP = encoder.crop_images
VARIANTS = {"shipped": ([], SHIPPED_CROP), "crop by per-pixel gather (before)": ([], gather_crop),
            **{change: ([change], SHIPPED_CROP) for change in (  # the image ablations whose step costs differ
                "policy.encoder_resolution=64", "policy.crop_shape=76", "objective.options.equal_time_ratio=0.75",
                "training.batch_size=128",
                # the equal-compute comparison's other objectives (benchmarks/learning/learning.py): their step
                # against imf's says whether equal samples are equal compute
                "objective.name=flow", "objective.name=ddpm")}}


@contextmanager
def cropping_with(crop):
    encoder.crop_images = crop
    try:
        yield
    finally:
        encoder.crop_images = SHIPPED_CROP


def make_step(overrides: list[str]):
    torch.manual_seed(0)
    cfg = load_config("pusht_image_cpu", overrides)
    fill_options(cfg)
    norm, rng = MinMaxNormalizer(), np.random.default_rng(0)
    norm.fit("action", rng.uniform(0, 512, (100, 2)))
    norm.fit("agent_pos", rng.uniform(0, 512, (100, 2)))
    policy = ImfPolicy(cfg, norm)
    policy.train()  # the random crop
    h, t, b = cfg.policy.horizon, cfg.policy.n_obs_steps, cfg.training.batch_size
    data = {"obs": {"image": torch.randint(0, 256, (b, t, 3, 96, 96), dtype=torch.uint8),
                    "agent_pos": torch.rand(b, h, 2) * 512},
            "action": torch.rand(b, h, 2) * 512}
    return training_step(policy, data), b


def measure(reps: int, n: int = 4) -> dict[str, tuple[float, int]]:
    """variant -> (median CPU seconds a step, its batch)."""
    steps = {name: (*make_step(ov), crop) for name, (ov, crop) in VARIANTS.items()}
    times: dict[str, list[float]] = {name: [] for name in steps}
    for name, (step, _, crop) in steps.items():
        with cropping_with(crop):
            step()  # warm-up
    for _ in range(reps):
        for name, (step, _, crop) in steps.items():
            with cropping_with(crop):
                t0 = time.process_time()
                for _ in range(n):
                    step()
                times[name].append((time.process_time() - t0) / n)
    return {name: (statistics.median(v), steps[name][1]) for name, v in times.items()}


def render(times: dict[str, tuple[float, int]], reps: int) -> str:
    shipped = times["shipped"][1] / times["shipped"][0]  # samples per CPU-second
    lines = [SECTION, "", f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"torch {torch.__version__}, 1 thread, `pusht_image_cpu` (batch {BATCH} unless the variant sets it); CPU seconds of the "
             f"process, median of {reps} interleaved rounds of 4 steps; load average {os.getloadavg()[0]:.1f} "
             f"at the end (other runs shared the 2 cores: the ratios, measured in the same rounds, are the "
             f"figures to read).", "",
             "| variant | CPU ms per step | samples per CPU-second | CPU per sample, x shipped |", "|---|---|---|---|"]
    lines += [f"| {name} | {t * 1e3:.1f} | {b / t:,.0f} | {shipped / (b / t):.2f} |" for name, (t, b) in times.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.reps < 1:
        raise SystemExit(f"image_step.py: --reps must be >= 1, got {args.reps}")
    torch.set_num_threads(1)
    times = measure(args.reps)
    text = render(times, args.reps)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
        record = {"measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.machine(),
                  "torch": torch.__version__, "reps": args.reps, "load_average": round(os.getloadavg()[0], 2),
                  "variants": {name: {"cpu_s_per_step": t, "batch": b} for name, (t, b) in times.items()}}
        (RESULTS / "image_step.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
