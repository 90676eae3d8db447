"""Training samples/s and rollout time of the reference preset on this machine's device.

    python benchmarks/speed/trial_speed.py [--device auto] [--steps 10] [--episodes 4]
    python benchmarks/speed/trial_speed.py loop [--presets pusht_lowdim_cpu,pusht_image_cpu] [--steps 20] [--rounds 5]

`loop`: the trial's own epoch loop (imf.train.trial.train_epoch: loader, device copy, autocast,
loss, backward, clip, AdamW, schedule, EMA, the metrics window) against its bare step (the same
calls on one fixed batch), with training.compile off and on, at one torch thread; the four
timings of a preset are interleaved round by round and the median kept, so load moves them
alike. Goal: the loop within 1.1x of its bare step.

Builds the `pusht_image_imf` policy (ResNet-18 encoder, 256 x 8 transformer, batch 64) on the
scripted demo data, times training steps (loss, backward, AdamW, EMA) after a warm-up, then
times rollouts of the EMA policy (300 steps, as the sweep scores). Writes its section of
benchmarks/RESULTS.md. On a GPU this is the number that sizes a 350-epoch sweep.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from epoch_timer import timed_epoch  # noqa: E402
from results_file import write_section  # noqa: E402

from imf.config import load_config  # noqa: E402
from imf.model import EMAModel  # noqa: E402
from imf.policy import ImfPolicy  # noqa: E402
from imf.train import autocast_for, build_datasets, make_loader, pick_device, score, use_bf16  # noqa: E402

SECTION = "## Trial (benchmarks/speed/trial_speed.py)"


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


LOOP_SECTION = "## Trial loop against its bare step (benchmarks/speed/trial_speed.py loop)"


def loop_and_step(preset: str, compiled: bool, folder: str):
    """Two callables timing ``steps`` training steps: through train_epoch, and bare."""
    from imf.store import RunLayout
    from imf.train import build_parts
    from imf.train import TrainState
    from imf.train import to_device

    cfg = load_config(preset, [f"training.compile={str(compiled).lower()}", "logging.trackers=none",
                               "training.time_budget_s=null", "training.max_train_steps=null"])
    parts = build_parts(cfg, RunLayout(Path(folder)), pick_device("cpu"), None, lambda line: None, "speed")
    state, t = TrainState(), cfg.training
    fixed = to_device(next(iter(parts.train_loader)), parts.device)

    def bare(steps: int) -> float:
        t0 = time.perf_counter()
        for _ in range(steps):
            with autocast_for(parts.device, parts.autocast):
                loss, _ = parts.policy.compute_loss(fixed)
            parts.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parts.policy.parameters(), t.grad_clip)
            parts.optimizer.step()
            parts.lr_schedule.step()
            parts.ema.step(parts.policy)
        return time.perf_counter() - t0

    def loop(steps: int) -> float:
        return timed_epoch(cfg, parts, state, steps, time.perf_counter)
    return loop, bare, t.batch_size


def cmd_loop(presets: list[str], steps: int, rounds: int) -> None:
    import statistics
    import tempfile

    torch.set_num_threads(1)
    lines = [LOOP_SECTION, "", f"`python benchmarks/speed/trial_speed.py loop --steps {steps} --rounds {rounds}` on "
             f"{platform.machine()}, 1 torch thread, torch {torch.__version__}; median of {rounds} interleaved rounds "
             f"of {steps} steps, after a warm-up round (where compile happens).", "",
             "| preset | compile | bare step samples/s | loop samples/s | loop / step time |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for preset in presets:
            runs = {c: loop_and_step(preset, c, f"{tmp}/{preset}-{c}") for c in (False, True)}
            for loop, bare, _ in runs.values():
                loop(2), bare(2)  # warm-up: compile, allocator, loader start
            times = {(c, kind): [] for c in runs for kind in ("loop", "bare")}
            for _ in range(rounds):
                for c, (loop, bare, _) in runs.items():
                    times[(c, "bare")].append(bare(steps))
                    times[(c, "loop")].append(loop(steps))
            batch = runs[False][2]
            for c in runs:
                b, l = (statistics.median(times[(c, k)]) for k in ("bare", "loop"))
                lines.append(f"| {preset} | {'on' if c else 'off'} | {steps * batch / b:,.0f} | {steps * batch / l:,.0f} | {l / b:.2f}x |")
                print(lines[-1], flush=True)
    write_section(LOOP_SECTION, lines)


def main() -> None:
    import sys
    if sys.argv[1:2] == ["loop"]:
        sub = argparse.ArgumentParser(prog="trial_speed.py loop")
        sub.add_argument("--presets", default="pusht_lowdim_cpu,pusht_image_cpu")
        sub.add_argument("--steps", type=int, default=20)
        sub.add_argument("--rounds", type=int, default=5)
        a = sub.parse_args(sys.argv[2:])
        return cmd_loop(a.presets.split(","), a.steps, a.rounds)
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
