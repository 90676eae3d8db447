"""Does it learn PushT? Learning curves of imf, flow and ddpm on one backbone and one budget.

    python benchmarks/learning.py                      # low-dim, imf-1 / flow-1 / ddpm-100
    python benchmarks/learning.py --minutes 10 --runs imf:1,flow:1,ddpm:100,flow:10
    python benchmarks/learning.py --obs image --minutes 30 --runs imf:1
    python benchmarks/learning.py --pin               # all runs at once, 2 cores each (big machine)
    python benchmarks/learning.py --minutes 15 --runs imf:1:42,flow:1:42,ddpm:100:42,imf:1:43 --threads 1
                                                      # objective:steps[:training seed]

Each run is a real `imf trial` of the CPU preset (pusht_lowdim_cpu, or pusht_image_cpu for
--obs image) with `training.time_budget_s` on the cpu clock (CPU seconds / torch
threads: the wall clock of an idle 2-core machine, unchanged when the machine is shared). The
trial scores its EMA policy on the 50 test seeds every few epochs. Afterwards the final
checkpoint is re-scored with other noise seeds (`imf eval --noise-seed`), and that timed, and
each trial's best.pt on 200 fresh seeds (`--final-eval 200`, seeds 500000..). Writes
docs/learning_curves.png (or learning_curves_image.png), a section of benchmarks/RESULTS.md and
benchmarks/learning_results/<obs>.json (with obs, fresh_score and fresh_success per run).
The test seeds and the metric are the trial's own; nothing here is tuned on them.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import yaml
from results_file import write_section

ROOT = Path(__file__).resolve().parent.parent
FRESH = 200  # best.pt re-scored on this many fresh seeds (500000..) after training
HOLD_STILL, EXPERT = 0.076, 1.0  # test_mean_score on the 50 test seeds (docs/pusht.md)
PRESETS = {"keypoints": "pusht_lowdim_cpu", "image": "pusht_image_cpu"}
THREADS: int | None = None  # --threads: torch threads per run (default: torch's own choice)
EXTRA: list[str] = []  # --set: more config overrides for every run


def run_name(objective: str, steps: int, seed: int | None) -> str:
    return f"{objective}-{steps}" + (f"-s{seed}" if seed is not None else "")


def start_trial(out: Path, obs: str, objective: str, steps: int, seed: int | None, minutes: float,
                cores: list[int] | None) -> tuple[subprocess.Popen, Path]:
    """Start one trial; with ``cores`` it runs pinned to them with as many torch threads.
    Its best.pt is re-scored on FRESH fresh seeds at the end (--final-eval)."""
    name = run_name(objective, steps, seed)
    run_dir = out / name
    steps_key = "objective.options.steps" if objective == "ddpm" else "objective.sample_steps"
    cmd = [sys.executable, "-m", "imf", "trial", PRESETS[obs], f"objective.name={objective}", f"{steps_key}={steps}",
           f"training.time_budget_s={minutes * 60:g}", "training.budget_clock=cpu",
           "logging.trackers=none", *([f"training.seed={seed}"] if seed is not None else []), *EXTRA,
           "--out", str(run_dir), "--store", "none", "--final-eval", str(FRESH),
           "--id", f"learning-{obs}-{name}"]
    env = dict(os.environ)
    if cores:
        env["OMP_NUM_THREADS"] = str(len(cores))
    elif THREADS:
        env["OMP_NUM_THREADS"] = str(THREADS)
    print(("" if not cores else f"[cores {cores}] ") + "$ " + " ".join(cmd[1:]), flush=True)
    log = open(out / f"{name}.out", "w")
    pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env, preexec_fn=pin)
    log.close()
    return proc, run_dir


def wait_trial(proc: subprocess.Popen, run_dir: Path) -> Path:
    if proc.wait() != 0:
        sys.exit(f"learning.py: trial failed, see {run_dir}.out")
    return run_dir


def start_rescore(run_dir: Path, seed: int, cores: list[int] | None) -> tuple[subprocess.Popen, float]:
    """`imf eval` of the final checkpoint with another noise seed (pinned like its trial)."""
    cmd = [sys.executable, "-m", "imf", "eval", str(run_dir / "checkpoints" / "latest.pt"),
           "--noise-seed", str(seed), "--device", "cpu", "--json"]
    pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
    threads = len(cores) if cores else THREADS
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env, preexec_fn=pin)
    return proc, time.perf_counter()


def finish_rescore(proc: subprocess.Popen, started: float) -> tuple[dict, float]:
    out, _ = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"learning.py: imf eval failed (exit {proc.returncode})")
    return json.loads(out), time.perf_counter() - started


def summarise(run_dir: Path, label: str, rescored: list[tuple[dict, float]]) -> dict:
    """The curve and the table's numbers. ``final`` is the last rollout (noise seed =
    training.seed) plus the same checkpoint re-scored with the other noise seeds."""
    rows = [json.loads(line) for line in (run_dir / "logs.json.txt").read_text().splitlines()]
    scored = [r for r in rows if "test_mean_score" in r]
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    batch_size = config["training"]["batch_size"]
    fresh = json.loads((run_dir / "final_eval.json").read_text())
    return {
        "label": label, "obs": config["policy"]["obs_type"], "seed": config["training"]["seed"],
        "fresh_score": fresh["mean"], "fresh_se": fresh["se"], "fresh_success": fresh["success_rate"],
        "fresh_success_se": fresh["success_se"], "fresh_episodes": fresh["episodes"],
        "curve": [(r["train_s"] / 60, r["test_mean_score"], r["test_success_rate"]) for r in scored],
        "best": max(r["test_mean_score"] for r in scored),
        "best_success": max(r["test_success_rate"] for r in scored),
        "last3": sum(r["test_mean_score"] for r in scored[-3:]) / len(scored[-3:]),
        "final": [scored[-1]["test_mean_score"]] + [res["test_mean_score"] for res, _ in rescored],
        "final_success": [scored[-1]["test_success_rate"]] + [res["test_success_rate"] for res, _ in rescored],
        "samples_s": rows[-1]["global_step"] * batch_size / rows[-1]["train_s"],
        "steps": rows[-1]["global_step"], "train_min": rows[-1]["train_s"] / 60,
        "eval_s": min(seconds for _, seconds in rescored),
        "hold_still_rmse": rows[0].get("val_hold_still_rmse"),
        "rmse": rows[-1].get("val_action_rmse"), "rmse_first": rows[-1].get("val_action_rmse_first"),
    }


def plot(results: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for res in results:
        minutes = [c[0] for c in res["curve"]]
        axes[0].plot(minutes, [c[1] for c in res["curve"]], marker="o", ms=3, label=res["label"])
        axes[1].plot(minutes, [c[2] for c in res["curve"]], marker="o", ms=3, label=res["label"])
    for ax, name in zip(axes, ("test_mean_score (50 test seeds)", "success rate (coverage > 0.95)")):
        ax.axhline(EXPERT, color="green", ls="--", lw=1, label="scripted expert" if ax is axes[0] else None)
        if ax is axes[0]:
            ax.axhline(HOLD_STILL, color="grey", ls=":", lw=1, label="hold still")
        ax.set_xlabel("training minutes (cpu clock: CPU seconds / torch threads)")
        ax.set_ylabel(name)
        ax.set_ylim(0, 1.05)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def table(results: list[dict], obs: str, minutes: float, noise_seeds: list[int],
          machine: str | None) -> list[str]:
    section = f"## Learning, {obs} observations (benchmarks/learning.py)"
    where = machine or f"{platform.machine()}, {os.cpu_count()} cores, torch threads {_threads()}"
    lines = [section, "",
             f"`python benchmarks/learning.py --obs {obs} --minutes {minutes:g}` on {where}; budget {minutes:g} training minutes per run "
             f"(cpu clock), EMA policy scored on the 50 test seeds during training; `final` re-scores the last "
             f"checkpoint with noise seeds {', '.join(map(str, noise_seeds))} besides the last rollout's (mean, min-max); "
             f"eval seconds include starting `imf eval`. "
             f"Hold still: {HOLD_STILL}; expert: {EXPERT}.", "",
             f"Fresh: best.pt re-scored on {FRESH} fresh seeds (500000..), mean coverage ± SE and success ± SE.", "",
             "| run | steps | samples/s | best score | last-3 mean | best success | final score | final success | fresh coverage | fresh success | s per 50-episode eval | val action RMSE (first / chunk, hold still) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        f = r["final"]
        fresh = (f"{r['fresh_score']:.3f} ± {r['fresh_se']:.3f} | {r['fresh_success']:.3f} ± {r['fresh_success_se']:.3f}"
                 if "fresh_score" in r else "- | -")
        lines.append(
            f"| {r['label']} | {r['steps']} | {r['samples_s']:.0f} | {r['best']:.3f} | {r['last3']:.3f} | "
            f"{r['best_success']:.2f} | {sum(f) / len(f):.3f} ({min(f):.3f}-{max(f):.3f}) | "
            f"{sum(r['final_success']) / len(f):.2f} | {fresh} | {r['eval_s']:.1f} | "
            f"{_num(r['rmse_first'])} / {_num(r['rmse'])} ({_num(r['hold_still_rmse'])}) |")
    return lines


def _num(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def _threads() -> int:
    import torch
    return torch.get_num_threads()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--obs", choices=sorted(PRESETS), default="keypoints")
    parser.add_argument("--minutes", type=float, default=10.0, help="training minutes per run (cpu clock)")
    parser.add_argument("--runs", default="imf:1,flow:1,ddpm:100", help="objective:sampling-steps, comma-separated")
    parser.add_argument("--noise-seeds", default="1", help="other noise seeds for re-scoring the final checkpoint")
    parser.add_argument("--out", type=Path, default=Path("runs/learning"))
    parser.add_argument("--pin", action="store_true",
                        help="run all at once, each pinned to 2 cores of its own (needs 2 cores a run)")
    parser.add_argument("--machine", help="where it ran, for the table (default: this machine's facts)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for every run (repeatable), e.g. training.rollout_every=8")
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time (unpinned; see --threads)")
    parser.add_argument("--threads", type=int, help="torch threads per run (the cpu clock divides by it)")
    parser.add_argument("--first-core", type=int, default=0, help="with --pin: the first core to use")
    parser.add_argument("--from-json", type=Path, help="redraw the figure and table from a results.json")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave RESULTS.md and docs/ alone")
    args = parser.parse_args()
    if not args.minutes > 0:
        sys.exit(f"learning.py: --minutes must be > 0, got {args.minutes}")
    runs = []
    for item in args.runs.split(","):
        name, steps, *seed = item.split(":")
        if not steps.isdigit() or int(steps) < 1 or len(seed) > 1 or (seed and not seed[0].isdigit()):
            sys.exit(f"learning.py: --runs item {item!r}: expected objective:steps[:seed], e.g. imf:1 or imf:1:43")
        runs.append((name, int(steps), int(seed[0]) if seed else None))
    if args.parallel < 1:
        sys.exit(f"learning.py: --parallel must be >= 1, got {args.parallel}")
    try:
        noise_seeds = [int(s) for s in args.noise_seeds.split(",")]
    except ValueError:
        sys.exit(f"learning.py: --noise-seeds must be integers separated by commas, got {args.noise_seeds!r}")
    global THREADS
    THREADS = args.threads
    EXTRA[:] = args.set
    if args.from_json:
        write_outputs(json.loads(args.from_json.read_text()), args, noise_seeds)
        return
    out = (args.out / args.obs).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cores = [[args.first_core + 2 * i, args.first_core + 2 * i + 1] if args.pin else None
             for i in range(len(runs))]
    if args.pin:  # all runs at once, run i on cores first+2i and first+2i+1
        if args.first_core + 2 * len(runs) > (os.cpu_count() or 1):
            sys.exit(f"learning.py: --pin needs cores {args.first_core}..{args.first_core + 2 * len(runs) - 1}, "
                     f"this machine has {os.cpu_count()}")
        started = [start_trial(out, args.obs, n, k, s, args.minutes, c) for (n, k, s), c in zip(runs, cores)]
        run_dirs = [wait_trial(*item) for item in started]
        rescores = [[start_rescore(d, seed, c) for seed in noise_seeds] for d, c in zip(run_dirs, cores)]
        rescored = [[finish_rescore(*item) for item in per_run] for per_run in rescores]
    else:
        run_dirs, rescored = run_in_lanes(runs, out, args, noise_seeds)
    results = [summarise(d, f"{n}, {k} step{'s' if k > 1 else ''}" + (f", seed {s}" if s is not None else ""), r)
               for (n, k, s), d, r in zip(runs, run_dirs, rescored)]
    (out / "results.json").write_text(json.dumps(results, indent=1))
    write_outputs(results, args, noise_seeds)


def run_in_lanes(runs: list, out: Path, args: argparse.Namespace, noise_seeds: list[int]
                 ) -> tuple[list[Path], list[list[tuple[dict, float]]]]:
    """Each run then its re-scores, --parallel runs at a time (unpinned, --threads each)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(run):
        name, steps, seed = run
        run_dir = wait_trial(*start_trial(out, args.obs, name, steps, seed, args.minutes, None))
        return run_dir, [finish_rescore(*start_rescore(run_dir, s, None)) for s in noise_seeds]

    with ThreadPoolExecutor(args.parallel) as pool:
        done = list(pool.map(one, runs))
    return [d for d, _ in done], [r for _, r in done]


def write_outputs(results: list[dict], args: argparse.Namespace, noise_seeds: list[int]) -> None:
    lines = table(results, args.obs, args.minutes, noise_seeds, args.machine)
    print("\n".join(lines))
    if not args.no_write:
        name = "learning_curves.png" if args.obs == "keypoints" else f"learning_curves_{args.obs}.png"
        threads = f", {args.threads} torch thread{'s' if args.threads > 1 else ''} a run" if args.threads else ""
        plot(results, ROOT / "docs" / name, f"PushT from {args.obs}: {args.minutes:g} training minutes a run on a CPU{threads}")
        write_section(lines[0], lines)
        (ROOT / "benchmarks" / "learning_results" / f"{args.obs}.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
