"""Training samples/s and rollout time of the reference preset on this machine's device.

    python benchmarks/trial_speed.py [--device auto] [--steps 10] [--episodes 4]

Builds the `pusht_image_imf` policy (ResNet-18 encoder, 256 x 8 transformer, batch 64) on the
scripted demo data, times training steps (loss, backward, AdamW, EMA) after a warm-up, then
times rollouts of the EMA policy (300 steps, as the sweep scores). Writes its section of
benchmarks/RESULTS.md. On a GPU this is the number that sizes a 350-epoch sweep.
"""
from __future__ import annotations

import argparse
import platform
import time

import torch
from results_file import write_section

from imf.config import load_config
from imf.model.ema import EMAModel
from imf.policy import ImfPolicy
from imf.train.data import build_datasets, make_loader
from imf.train.evaluate import score
from imf.train.precision import autocast_for, use_bf16
from imf.train.parts import pick_device

SECTION = "## Trial (benchmarks/trial_speed.py)"


def time_training(cfg, device, steps: int) -> tuple[float, float, torch.nn.Module]:
    """Samples per second, seconds per step (after two warm-up steps) and the EMA policy."""
    train, _, normalizer, _ = build_datasets(cfg, lambda s: None)
    policy = ImfPolicy(cfg, normalizer).to(device)
    ema = EMAModel(policy)
    opt = torch.optim.AdamW(policy.optimizer_groups(cfg.training), lr=cfg.training.lr)
    loader = make_loader(train, cfg, shuffle=True, generator=torch.Generator().manual_seed(0))
    batches = iter(loader)
    autocast = use_bf16(device, cfg.training.bf16)  # the trial's choice
    t0 = 0.0
    for i in range(steps + 2):
        if i == 2:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        batch = {k: ({kk: vv.to(device) for kk, vv in v.items()} if isinstance(v, dict) else v.to(device))
                 for k, v in next(batches).items()}
        with autocast_for(device, autocast):
            loss, _ = policy.compute_loss(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        ema.step(policy)
    if device.type == "cuda":
        torch.cuda.synchronize()
    per_step = (time.perf_counter() - t0) / steps
    return cfg.training.batch_size / per_step, per_step, ema.averaged_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=4)
    args = parser.parse_args()
    device = pick_device(args.device)
    cfg = load_config("pusht_image_imf", ["data.demo_episodes=50", f"eval.n_test={args.episodes}"])
    samples_per_s, per_step, policy = time_training(cfg, device, args.steps)
    t0 = time.perf_counter()
    result = score(policy, cfg, device, list(range(100000, 100000 + args.episodes)), seed=0)
    rollout_s = time.perf_counter() - t0
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.machine()
    epoch_steps = 90 * 140 // cfg.training.batch_size  # ~90 train episodes x ~140 steps
    lines = [SECTION, "",
             f"Reference preset `pusht_image_imf` (ResNet-18 + 256 x 8 transformer, imf objective, batch "
             f"{cfg.training.batch_size}) on {device} ({name}), torch {torch.__version__}, "
             f"{torch.get_num_threads()} thread(s).", "",
             "| measurement | value |", "|---|---|",
             f"| training samples/s (loss + backward + AdamW + EMA) | {samples_per_s:,.0f} |",
             f"| seconds per training step | {per_step:.3f} |",
             f"| estimated epoch of ~{epoch_steps} steps (90 demo episodes) | {epoch_steps * per_step:.0f} s |",
             f"| rollout: {args.episodes} episodes x 300 steps, EMA policy, 1-step imf | {rollout_s:.1f} s |",
             f"| rollout per episode | {rollout_s / args.episodes:.2f} s |",
             "", "No GPU was lent to the sessions that wrote this project; run this script on one to "
             "size a sweep (350 epochs x the epoch time above, plus a 50-episode rollout every 50 epochs)."]
    write_section(SECTION, lines)
    print("\n".join(lines))
    print(f"(scored {result.mean_score:.3f} untrained, as expected)")


if __name__ == "__main__":
    main()
