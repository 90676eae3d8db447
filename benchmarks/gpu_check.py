"""The Python half of benchmarks/gpu_check.sh (run that, not this).

    python benchmarks/gpu_check.py env OUT                         # environment facts -> OUT/env.json
    python benchmarks/gpu_check.py run OUT --device cuda --seconds 120 [--dry] [--cpu-bf16]
    python benchmarks/gpu_check.py summary OUT                     # the block for RESULTS.md

`run` trains the reference preset `pusht_image_imf` for a fixed wall time with the trial's own
pieces (data set and loader, policy, AdamW groups, warm-up schedule, grad clip, EMA, and the
trial's autocast choice), then times a batch-1 action chunk of a 1-step imf policy against a
100-step ddpm one (benchmarks/policy_speed.py's `latency`) and rolls out the trained EMA policy
on 10 test seeds. Results go to OUT/run.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

SECTION = "## GPU check (benchmarks/gpu_check.sh)"
# The step cost does not depend on the data set's size: 60 scripted episodes (~5 s to make on a
# fresh machine) instead of the preset's 200 keep the check short.
DATA = ["data.demo_episodes=60"]
# Dry run: a tiny model (bf16 convolutions are slow on a CPU), so the script is checked in ~1 min.
DRY = ["data.demo_episodes=10", "training.batch_size=8", "eval.max_steps=50", "policy.encoder=small",
       "policy.n_emb=64", "policy.n_layer=2", "policy.n_head=2"]


def env_facts() -> dict:
    cuda = torch.cuda.is_available()
    facts = {"python": platform.python_version(), "torch": torch.__version__,
             "torch_cuda": torch.version.cuda, "cuda_available": cuda, "cpu_cores": os.cpu_count(),
             "cpu": platform.processor() or platform.machine(), "time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if cuda:
        props = torch.cuda.get_device_properties(0)
        facts.update(device_name=props.name, device_memory_gib=round(props.total_memory / 2**30, 1),
                     capability=f"{props.major}.{props.minor}", bf16_supported=torch.cuda.is_bf16_supported(),
                     device_count=torch.cuda.device_count())
    try:
        facts["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                         text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        facts["commit"] = "?"
    return facts


def to_device(tree, device: torch.device):
    if isinstance(tree, dict):
        return {k: to_device(v, device) for k, v in tree.items()}
    return tree.to(device, non_blocking=True)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_for(cfg, device: torch.device, seconds: float, cpu_bf16: bool, warmup_steps: int = 3) -> tuple[dict, object]:
    """Train for ``seconds`` of timed wall time (after ``warmup_steps`` untimed steps), as the trial does."""
    from imf.model.ema import EMAModel
    from imf.policy import ImfPolicy
    from imf.train.data import build_datasets, make_loader
    from imf.train.precision import autocast_for, use_bf16
    from imf.train.budget import cosine_with_warmup
    from imf.train.parts import seed_everything

    t = cfg.training
    seed_everything(t.seed)
    t_setup = time.perf_counter()
    train_ds, _, normalizer, _ = build_datasets(cfg, lambda line: print(line, flush=True))
    policy = ImfPolicy(cfg, normalizer).to(device)
    ema = EMAModel(policy, power=t.ema_power, max_value=t.ema_max)
    optimizer = torch.optim.AdamW(policy.optimizer_groups(t), lr=t.lr, betas=tuple(t.betas))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_with_warmup(t.lr_warmup_steps, 10**6))
    loader = make_loader(train_ds, cfg, shuffle=True, generator=torch.Generator().manual_seed(t.seed))
    autocast = use_bf16(device, t.bf16) or (device.type == "cpu" and cpu_bf16)
    setup_s = time.perf_counter() - t_setup
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    losses, wait, steps, t0 = [], 0.0, 0, None
    batches = iter(loader)
    policy.train()
    while t0 is None or time.perf_counter() - t0 < seconds:
        if steps == warmup_steps:
            sync(device)
            t0, wait, losses_before = time.perf_counter(), 0.0, len(losses)
        tw = time.perf_counter()
        try:
            batch = next(batches)
        except StopIteration:
            batches = iter(loader)
            batch = next(batches)
        batch = to_device(batch, device)
        wait += time.perf_counter() - tw
        with autocast_for(device, autocast):
            loss, metrics = policy.compute_loss(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), t.grad_clip)
        optimizer.step()
        schedule.step()
        ema.step(policy)
        losses.append(metrics["loss"] if "loss" in metrics else float(loss.detach()))  # synced
        steps += 1
    sync(device)
    wall = time.perf_counter() - t0
    timed = steps - warmup_steps
    finite = [x for x in losses if math.isfinite(x)]
    out = {"setup_s": round(setup_s, 1), "seconds": round(wall, 1), "steps": steps, "timed_steps": timed,
           "batch_size": t.batch_size, "num_workers": t.num_workers, "bf16_autocast": autocast,
           "demo_episodes": cfg.data.demo_episodes, "train_windows": len(train_ds),
           "samples_per_s": round(timed * t.batch_size / wall, 1),
           "compute_samples_per_s": round(timed * t.batch_size / max(wall - wait, 1e-9), 1),
           "data_wait_share": round(wait / wall, 3), "nonfinite_losses": len(losses) - len(finite),
           "loss_first": losses[0], "loss_last": losses[-1],
           "loss_min": min(finite, default=None), "loss_max": max(finite, default=None),
           "loss_timed_mean": sum(losses[losses_before:]) / max(1, timed)}
    if device.type == "cuda":
        out["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        out["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved(device) / 2**30, 2)
    out["peak_host_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    return out, ema.averaged_model


def chunk_latency(cfg, device: torch.device, dry: bool) -> dict:
    """Milliseconds per batch-1 chunk at the preset's n_emb x n_layer (ResNet-18 encoder)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from policy_speed import latency  # noqa: E402  (a sibling benchmark)

    p = cfg.policy
    lat = latency(p.n_emb, p.n_layer, 1 if dry else 5, str(device))
    return {"size": f"{p.n_emb} x {p.n_layer}", **{k: round(v * 1e3, 2) for k, v in lat.items()}}


def rollout(policy, cfg, device: torch.device, episodes: int) -> dict:
    from imf.train.evaluate import score, test_seeds

    seeds = test_seeds(cfg.eval)[:episodes]
    t0 = time.perf_counter()
    result = score(policy, cfg, device, seeds, seed=0)
    return {"episodes": len(seeds), "max_steps": cfg.eval.max_steps, "seconds": round(time.perf_counter() - t0, 1),
            "mean_score": round(result.mean_score, 3), "success_rate": round(result.success_rate, 3)}


def cmd_run(args) -> None:
    from imf.config import load_config
    from imf.train.parts import pick_device

    device = pick_device(args.device)
    if args.dry and device.type == "cpu":
        torch.set_num_threads(1)  # on a shared CPU, OpenMP threads waiting for a core stall for seconds
    cfg = load_config("pusht_image_imf", DATA + (DRY if args.dry else []) + [f"training.device={args.device}"]
                      + list(args.override))
    result: dict = {"device": str(device), "dry": args.dry, "preset": "pusht_image_imf", "overrides": args.override}
    out = Path(args.out) / "run.json"

    def stage(name, fn):
        print(f"gpu_check: {name} ...", flush=True)
        try:
            result[name] = fn()
        except Exception as exc:  # recorded, and the other stages still run
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"gpu_check: {name}: {json.dumps(result[name])}", flush=True)
        out.write_text(json.dumps(result, indent=1))

    trained = {}
    stage("train", lambda: _train(cfg, device, args, trained))
    stage("latency", lambda: chunk_latency(cfg, device, args.dry))
    stage("rollout", lambda: rollout(trained["policy"], cfg, device, 2 if args.dry else 10))
    failed = [k for k in ("train", "latency", "rollout") if "error" in result[k]]
    sys.exit(1 if failed or result["train"].get("nonfinite_losses") else 0)


def _train(cfg, device, args, trained: dict) -> dict:
    stats, trained["policy"] = train_for(cfg, device, args.seconds, args.cpu_bf16)
    return stats


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def summary_lines(out: Path) -> list[str]:
    env, run = _read(out / "env.json") or {}, _read(out / "run.json") or {}
    tests = (out / "pytest.txt").read_text().strip() if (out / "pytest.txt").exists() else "not run"
    dev = env.get("device_name") or env.get("cpu", "?")
    head = (f"Run {env.get('time', '?')} at commit {env.get('commit', '?')} on {run.get('device', '?')} ({dev}"
            + (f", {env.get('device_memory_gib')} GiB, capability {env.get('capability')}" if env.get("cuda_available") else "")
            + f"), {env.get('cpu_cores', '?')} CPU cores, torch {env.get('torch', '?')} (CUDA {env.get('torch_cuda')}), "
            f"Python {env.get('python', '?')}" + (" -- DRY RUN (tiny sizes, not a measurement)" if run.get("dry") else "") + ".")
    lines = [SECTION, "", head, "", "| check | result |", "|---|---|", f"| GPU-marked tests (`pytest -m gpu`) | {tests} |"]
    tr, lat, ro = run.get("train", {}), run.get("latency", {}), run.get("rollout", {})
    if "error" in tr or not tr:
        lines.append(f"| training | FAILED: {tr.get('error', 'no result')} |")
    else:
        mem = (f"{tr['peak_allocated_gib']} GiB allocated, {tr['peak_reserved_gib']} GiB reserved"
               if "peak_allocated_gib" in tr else "n/a (CPU)")
        lines += [
            f"| training: preset `pusht_image_imf`, batch {tr['batch_size']}, bf16 autocast {'on' if tr['bf16_autocast'] else 'off'}, "
            f"{tr['num_workers']} loader workers, {tr['train_windows']:,} windows of {tr['demo_episodes']} scripted episodes "
            f"| {tr['timed_steps']} steps in {tr['seconds']} s (after 3 warm-up steps; setup {tr['setup_s']} s) |",
            f"| training samples/s: end to end; without the data wait | {tr['samples_per_s']:,.0f}; {tr['compute_samples_per_s']:,.0f} |",
            f"| share of step time waiting for data | {tr['data_wait_share']:.1%} |",
            f"| peak GPU memory | {mem} |",
            f"| loss: first, last, min, max; non-finite steps | {tr['loss_first']:.3f}, {tr['loss_last']:.3f}, "
            f"{_num(tr['loss_min'])}, {_num(tr['loss_max'])}; {tr['nonfinite_losses']} |"]
    if "error" in lat or not lat:
        lines.append(f"| chunk latency | FAILED: {lat.get('error', 'no result')} |")
    else:
        lines += [f"| batch-1 chunk, {lat['size']}, ResNet-18 encoder included: imf 1 step; ddpm 100 steps (ratio) | "
                  f"{lat['imf']:.1f} ms; {lat['ddpm']:.0f} ms ({lat['ddpm'] / lat['imf']:.0f}x) |",
                  f"| same, transformer only | {lat['imf_t']:.2f} ms; {lat['ddpm_t']:.0f} ms ({lat['ddpm_t'] / lat['imf_t']:.0f}x) |"]
    if "error" in ro or not ro:
        lines.append(f"| rollout | FAILED: {ro.get('error', 'no result')} |")
    else:
        lines.append(f"| rollout of the trained EMA policy: {ro['episodes']} episodes x {ro['max_steps']} steps | "
                     f"{ro['seconds']} s, mean score {ro['mean_score']}, success {ro['success_rate']:.0%} |")
    return lines


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("env", "run", "summary"):
        p = sub.add_parser(name)
        p.add_argument("out", help="the folder gpu_check.sh collects results in")
        if name == "run":
            p.add_argument("--device", default="cuda")
            p.add_argument("--seconds", type=float, default=120.0)
            p.add_argument("--dry", action="store_true", help="tiny sizes: a quick CPU check of the script")
            p.add_argument("--cpu-bf16", action="store_true", help="autocast to bf16 on a CPU too")
            p.add_argument("--override", action="append", default=[], help="extra key=value config overrides")
    args = parser.parse_args()
    out = Path(args.out)
    if args.cmd == "env":
        facts = env_facts()
        (out / "env.json").write_text(json.dumps(facts, indent=1))
        print("\n".join(f"{k}: {v}" for k, v in facts.items()))
    elif args.cmd == "run":
        cmd_run(args)
    else:
        print("\n".join(summary_lines(out)))


if __name__ == "__main__":
    main()
