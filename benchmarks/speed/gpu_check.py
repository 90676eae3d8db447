"""The Python half of benchmarks/gpu_check.sh (run that, not this).

    python benchmarks/speed/gpu_check.py env OUT                         # environment facts -> OUT/env.json
    python benchmarks/speed/gpu_check.py run OUT --device cuda --seconds 120 [--dry] [--cpu-bf16]
    python benchmarks/speed/gpu_check.py slot OUT --device cuda          # the sweep's GPU probe -> OUT/slot.json
    python benchmarks/speed/gpu_check.py oom OUT --device cuda [--dry]   # the out-of-memory drill -> OUT/oom.json
    python benchmarks/speed/gpu_check.py summary OUT                     # the block for RESULTS.md

`run` trains the reference preset `pusht_image_imf` for a fixed wall time through the trial's
own parts and epoch loop, split over compile off/on x bf16 off/on (samples/s, host syncs per
step, peak memory each), times the loader alone with the auto workers, then times a batch-1 action chunk of a 1-step imf policy against a
100-step ddpm one (benchmarks/speed/policy_speed.py's `latency`) and rolls out the trained EMA policy
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


VARIANTS = [("eager", False), ("eager", True), ("compile", True), ("compile", False)]  # (mode, bf16)
DRY_VARIANTS = VARIANTS[:2] + [("compile", False)]  # one compile: minutes on a shared 2-core CPU
SYNCS = ("item", "tolist", "cpu", "__bool__", "__float__", "numpy")


def train_variants(cfg, device: torch.device, seconds: float, cpu_bf16: bool, out: Path,
                   variants: list[tuple[str, bool]] = VARIANTS) -> tuple[dict, object]:
    """The trial's own parts and epoch loop (imf.train.parts / imf.train.trial.train_epoch) for
    ``seconds`` of wall time split over the four (compile, bf16) variants, each from fresh
    weights after 3 untimed warm-up steps (where compile happens). Per variant: samples/s,
    host syncs per step (Tensor.item/tolist/cpu/bool/float/numpy outside torch), peak memory;
    plus the loader alone with training.num_workers as configured (auto)."""
    results = {"variants": [], "batch_size": cfg.training.batch_size,
               "demo_episodes": cfg.data.demo_episodes}
    policy = None
    for mode, bf16 in variants:
        row, policy = _one_variant(cfg, device, seconds / len(variants), mode, bf16 and (device.type == "cuda" or cpu_bf16), out)
        results["variants"].append(row)
        print(f"gpu_check: train {json.dumps(row)}", flush=True)
    results["loader_samples_per_s"], results["num_workers"] = _loader_rate(cfg, device)
    results["peak_host_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    return results, policy


def _one_variant(cfg, device, seconds: float, mode: str, bf16: bool, out: Path) -> tuple[dict, object]:
    import copy

    from imf.store import RunLayout
    from imf.train import TrainClock
    from imf.train import build_parts
    from imf.train import TrainState
    from imf.train import train_epoch

    cfg = copy.deepcopy(cfg)
    cfg.training.compile = mode == "compile"
    cfg.training.max_train_steps = None
    t_setup = time.perf_counter()
    parts = build_parts(cfg, RunLayout(out / f"train-{mode}-{'bf16' if bf16 else 'fp32'}"), device, None,
                        lambda line: None, "gpu-check")
    parts.autocast = bf16
    state = TrainState()
    parts.steps_per_epoch, parts.clock = 3, TrainClock("wall", None)  # warm-up (and compile)
    warm = train_epoch(cfg, parts, state)
    sync(device)
    setup_s = time.perf_counter() - t_setup
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    parts.steps_per_epoch, parts.clock = len(parts.train_loader), TrainClock("wall", seconds)
    step0, losses, syncs = state.global_step, [], _SyncCounter()
    with syncs:
        while not parts.clock.exhausted():
            epoch = train_epoch(cfg, parts, state)
            if epoch is None:  # diverged
                break
            state.epoch += 1
            losses.append(epoch["train_loss"])
        sync(device)
    steps = state.global_step - step0
    row = {"mode": mode, "bf16_autocast": bf16, "setup_s": round(setup_s, 1), "seconds": round(parts.clock.seconds(), 1),
           "timed_steps": steps, "samples_per_s": round(steps * cfg.training.batch_size / max(parts.clock.seconds(), 1e-9), 1),
           "syncs_per_step": round(syncs.count / max(steps, 1), 3), "loss_warmup": warm and warm["train_loss"],
           "loss_last_epoch": losses[-1] if losses else None,
           "nonfinite_losses": sum(1 for x in losses if x is None or not math.isfinite(x))}
    if device.type == "cuda":
        row["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    return row, parts.scored_policy


class _SyncCounter:
    """Counts host reads of tensors made by non-torch code while active (a device sync on CUDA)."""

    def __init__(self) -> None:
        self.count, self._real = 0, {}

    def __enter__(self):
        torch_dir = os.path.dirname(torch.__file__)
        for name in SYNCS:
            real = self._real[name] = getattr(torch.Tensor, name)

            def counted(tensor, *a, _real=real, **k):
                if not sys._getframe(1).f_code.co_filename.startswith(torch_dir):
                    self.count += 1
                return _real(tensor, *a, **k)
            setattr(torch.Tensor, name, counted)
        return self

    def __exit__(self, *exc) -> None:
        for name, real in self._real.items():
            setattr(torch.Tensor, name, real)


def _loader_rate(cfg, device: torch.device, batches: int = 40) -> tuple[float, int]:
    """Samples/s of the training loader alone, to the device, with the configured workers."""
    from imf.train import build_datasets, loader_workers, make_loader

    train_ds = build_datasets(cfg, lambda line: None)[0]
    loader = make_loader(train_ds, cfg, shuffle=True, generator=torch.Generator().manual_seed(0), device=device)
    it, n = iter(loader), 0
    next(it)  # workers started
    t0 = time.perf_counter()
    for batch in it:
        to_device(batch, device)
        n += 1
        if n == batches:
            break
    sync(device)
    return round(n * cfg.training.batch_size / (time.perf_counter() - t0), 1), loader_workers(cfg.training.num_workers, device)


def chunk_latency(cfg, device: torch.device, dry: bool) -> dict:
    """Milliseconds per batch-1 chunk at the preset's n_emb x n_layer (ResNet-18 encoder)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from policy_speed import latency  # noqa: E402  (a sibling benchmark)

    p = cfg.policy
    lat = latency(p.n_emb, p.n_layer, 1 if dry else 5, str(device))
    return {"size": f"{p.n_emb} x {p.n_layer}", **{k: round(v * 1e3, 2) for k, v in lat.items()}}


def rollout(policy, cfg, device: torch.device, episodes: int) -> dict:
    from imf.train import score, test_seeds

    seeds = test_seeds(cfg.eval)[:episodes]
    t0 = time.perf_counter()
    result = score(policy, cfg, device, seeds, seed=0)
    return {"episodes": len(seeds), "max_steps": cfg.eval.max_steps, "seconds": round(time.perf_counter() - t0, 1),
            "mean_score": round(result.mean_score, 3), "success_rate": round(result.success_rate, 3)}


def cmd_run(args) -> None:
    from imf.config import load_config
    from imf.train import pick_device

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
    nonfinite = any(v.get("nonfinite_losses") for v in result["train"].get("variants", []))
    sys.exit(1 if failed or nonfinite else 0)


def _train(cfg, device, args, trained: dict) -> dict:
    stats, trained["policy"] = train_variants(cfg, device, args.seconds, args.cpu_bf16, Path(args.out),
                                              DRY_VARIANTS if args.dry else VARIANTS)
    return stats


# The out-of-memory drill: a trial whose first step cannot fit on the GPU (a 1024 x 24 policy,
# every window of the data set in one batch); batches tried in turn until one does not fit.
OOM_BATCHES = (4096, 16384)
OOM_RUN = ["policy.n_emb=1024", "policy.n_layer=24", "policy.n_head=16", "training.num_epochs=1",
           "training.max_train_steps=1", "training.max_val_steps=1", "training.val_probe_windows=8",
           "training.compile=false", "eval.n_test=1", "eval.n_train=0", "eval.max_steps=8",
           "data.demo_episodes=130", "data.val_ratio=0.02", "logging.trackers=[]"]
EXIT_NO_CUDA, EXIT_GPU_OOM = 69, 71  # imf/errors.py


def _imf(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "imf", *args], capture_output=True, text=True,
                          timeout=timeout)


def cmd_slot(args) -> dict:
    """The sweep's GPU probe as a queue check sees it: the job wrapper's answer, and what
    `imf sweep --dry-run --queue local:0` says of the slot (found on CUDA, down on a CPU)."""
    probe = subprocess.run([sys.executable, "-m", "imf.scheduler.wrapper", "gpus", sys.executable],
                           capture_output=True, text=True, timeout=300)
    found = json.loads(probe.stdout) if probe.returncode == 0 else {"error": probe.stderr[-300:]}
    dry = _imf(["sweep", "smoke", "--grid", "32x1", "--queue", "local:0", "--dry-run", "--name", "slot",
                "--out", str(Path(args.out) / "slot-sweep")], 300)
    line = next((ln.strip() for ln in dry.stdout.splitlines() if ln.strip().startswith("gpu local:0:")), "")
    want = "GPU 0 on" if args.device.startswith("cuda") else "no CUDA device 0"
    return {"devices": found.get("devices"), "torch": found.get("torch"), "line": line,
            "ok": probe.returncode == 0 and want in line}


def cmd_oom(args) -> dict:
    """On CUDA, a batch that cannot fit: the trial must end failed with exit 71 and the named
    reason. On a CPU (--dry) the same trial asked for CUDA must be refused with exit 69."""
    out = Path(args.out)
    if not args.device.startswith("cuda"):
        proc = _imf(["trial", "smoke", "--device", "cuda", "--out", str(out / "oom-cpu")], 300)
        return {"batch": None, "exit": proc.returncode, "line": proc.stderr.strip()[-300:],
                "ok": proc.returncode == EXIT_NO_CUDA and not (out / "oom-cpu").exists()}
    result: dict = {"ok": False}
    for batch in OOM_BATCHES:
        run = out / f"oom-{batch}"
        started = time.perf_counter()
        proc = _imf(["trial", "pusht_image_imf", *OOM_RUN, f"training.batch_size={batch}", "--device", "cuda",
                     "--store", "none", "--out", str(run)], 240)
        reason = (_read(run / "summary.json") or {}).get("reason", "")
        result = {"batch": batch, "exit": proc.returncode, "seconds": round(time.perf_counter() - started, 1),
                  "reason": reason, "line": proc.stderr.strip()[-300:]}
        if proc.returncode != 0:
            result["ok"] = proc.returncode == EXIT_GPU_OOM and reason.startswith("out of GPU memory at batch")
            break
    return result


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
    slot, oom = _read(out / "slot.json") or {}, _read(out / "oom.json") or {}
    lines.append(f"| slot probe (`imf sweep --dry-run --queue local:0`) | {'ok' if slot.get('ok') else 'FAILED'}: "
                 f"{slot.get('line') or slot.get('error') or 'no result'} |")
    lines.append(f"| out-of-memory drill (batch {oom.get('batch') or 'n/a: CPU, a cuda trial refused'}) | "
                 f"{'ok' if oom.get('ok') else 'FAILED'}: exit {oom.get('exit')}, "
                 f"{oom.get('reason') or oom.get('line') or 'no result'} |")
    tr, lat, ro = run.get("train", {}), run.get("latency", {}), run.get("rollout", {})
    if "error" in tr or not tr:
        lines.append(f"| training | FAILED: {tr.get('error', 'no result')} |")
    else:
        lines.append(f"| training: preset `pusht_image_imf`, batch {tr['batch_size']}, the trial's own loop, "
                     f"{tr['demo_episodes']} scripted episodes; per variant: timed steps in s, samples/s, host syncs "
                     f"per step, peak GPU memory, last epoch's loss | |")
        for v in tr["variants"]:
            mem = f"{v['peak_allocated_gib']} GiB" if "peak_allocated_gib" in v else "n/a (CPU)"
            lines.append(f"| {v['mode']}, bf16 {'on' if v['bf16_autocast'] else 'off'} (setup + warm-up {v['setup_s']} s) | "
                         f"{v['timed_steps']} steps in {v['seconds']} s, {v['samples_per_s']:,.0f} samples/s, "
                         f"{v['syncs_per_step']} syncs/step, {mem}, loss {_num(v['loss_last_epoch'])}; "
                         f"{v['nonfinite_losses']} non-finite |")
        lines.append(f"| loader alone, {tr['num_workers']} workers (training.num_workers auto) | "
                     f"{tr['loader_samples_per_s']:,.0f} samples/s |")
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
    for name in ("env", "run", "slot", "oom", "summary"):
        p = sub.add_parser(name)
        p.add_argument("out", help="the folder gpu_check.sh collects results in")
        if name in ("slot", "oom"):
            p.add_argument("--device", default="cuda")
            p.add_argument("--dry", action="store_true")
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
    elif args.cmd in ("slot", "oom"):
        result = (cmd_slot if args.cmd == "slot" else cmd_oom)(args)
        (out / f"{args.cmd}.json").write_text(json.dumps(result, indent=1))
        print(f"gpu_check: {args.cmd}: {json.dumps(result)}")
        sys.exit(0 if result["ok"] else 1)
    else:
        print("\n".join(summary_lines(out)))


if __name__ == "__main__":
    main()
