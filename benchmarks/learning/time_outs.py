"""Are a policy's misses time-outs? Its checkpoint on the selection seeds at the task's 300 steps and
at more, beside the scripted expert's steps on the same seeds.

    python benchmarks/learning/time_outs.py RUN_DIR [RUN_DIR ...] [--checkpoint latest|best]
        [--episodes 200] [--long 600] [--no-write]

Each run's checkpoint is scored twice on --episodes selection seeds (500000..), with its own
sampling noise seed and one simulator worker: once with the task's episode length (eval.max_steps,
300) and once with --long steps. A seed that fails at 300 and finishes with more time was a
time-out, the policy too slow for it; one that fails either way was lost. The scripted expert
(imf/pusht/expert.py, the demonstrator) runs each seed once, and its steps tell which seeds are
long; beside it, how many times the expert's steps the policy takes on the seeds both finish in the
long episodes (its pace, 1: the expert's). Nothing here chooses a setting and the holdout is never
looked at. Writes
benchmarks/learning_results/time_outs_<obs>.json and its section of benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import torch
import yaml
from action_horizon import RESULTS_DIR, run_named

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

from imf.pusht import DemoRecipe, run_expert_episode  # noqa: E402
from imf.seeds import SELECTION  # noqa: E402
from imf.train import load_checkpoint, policy_from_checkpoint, score  # noqa: E402

LOST = 0.8  # a score below this is far from the goal, not a near miss


def scored(checkpoint: Path, seeds: list[int], max_steps: int) -> tuple[list[float], list[int]]:
    """Per-seed scores and steps run of ``checkpoint`` in episodes of ``max_steps``, its training
    seed's noise (an episode stops at success)."""
    policy, cfg = policy_from_checkpoint(load_checkpoint(checkpoint), torch.device("cpu"))
    cfg = replace(cfg, eval=replace(cfg.eval, max_steps=max_steps, n_workers=1))
    result = score(policy, cfg, torch.device("cpu"), seeds, seed=cfg.training.seed)
    return [float(result.per_seed[s]) for s in seeds], [int(result.per_seed_steps[s]) for s in seeds]


def run_row(run_dir: Path, name: str, seeds: list[int], task: int, long: int) -> dict:
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    (at_task, _), (at_long, steps_long) = (scored(run_dir / "checkpoints" / name, seeds, n) for n in (task, long))
    return {"run": run_dir.name, "obs": config["policy"]["obs_type"], "seed": config["training"]["seed"],
            "expert_pace": config.get("data", {}).get("expert_pace", 1.0),
            "samples": run_named(run_dir, config).get("samples"), "checkpoint": name, "task_steps": task,
            "long_steps": long, "per_seed_task": at_task, "per_seed_long": at_long, "steps_long": steps_long}


def pace(row: dict, seeds: list[int], expert: dict[str, int]) -> tuple[float, int]:
    """The median over the seeds the policy finishes in the long episodes of its steps over the
    expert's on the same seed, and how many seeds that is."""
    ratios = [row["steps_long"][i] / expert[str(s)] for i, s in enumerate(seeds) if row["per_seed_long"][i] >= 1.0]
    return (statistics.median(ratios) if ratios else math.nan), len(ratios)


def reading(row: dict, seeds: list[int]) -> dict:
    """The run's shortfall from a perfect score at the task's length, and how much of it the seeds
    under LOST carry; of those seeds, how many reach LOST or finish given the long episodes."""
    task, long = row["per_seed_task"], row["per_seed_long"]
    lost = [i for i, v in enumerate(task) if v < LOST]
    n = len(seeds)
    return {"mean_task": sum(task) / n, "mean_long": sum(long) / n, "shortfall": sum(1 - v for v in task) / n,
            "shortfall_lost": sum(1 - task[i] for i in lost) / n, "lost": len(lost),
            "lost_recovered": sum(long[i] >= LOST for i in lost), "lost_finished": sum(long[i] >= 1.0 for i in lost)}


def expert_steps(seeds: list[int], pace: float = 1.0) -> dict[str, int]:
    """The scripted expert's steps on each seed, at ``pace`` (a run's demonstrator, data.expert_pace)."""
    return {str(s): run_expert_episode(s, legacy=True, recipe=DemoRecipe(pace=pace)).steps for s in seeds}


def lines_for(rows: list[dict], seeds: list[int], expert: dict[str, int],
              paced: dict[str, dict[str, int]] | None = None) -> list[str]:
    out = ["| run | samples | checkpoint | score at task steps | score at long steps | shortfall | of it, seeds "
           f"under {LOST} | seeds under {LOST} | of them at or above {LOST} given long | of them finished | "
           "steps over the expert's (median, seeds finished given long) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = reading(r, seeds)
        ratio, n = pace(r, seeds, expert)
        samples = f"{r['samples'] / 1e6:.2f}M" if r.get("samples") else "-"
        demos = f", demos at pace {r['expert_pace']:g}" if r.get("expert_pace", 1.0) != 1.0 else ""
        out.append(f"| {r['run']} (seed {r['seed']}{demos}) | {samples} | {r['checkpoint']} | {m['mean_task']:.3f} "
                   f"({r['task_steps']}) | {m['mean_long']:.3f} ({r['long_steps']}) | {m['shortfall']:.3f} | "
                   f"{m['shortfall_lost']:.3f} | {m['lost']} | {m['lost_recovered']} | {m['lost_finished']} | "
                   f"{ratio:.2f} ({n}) |")
    lost_any = sorted({seeds[i] for r in rows for i, v in enumerate(r["per_seed_task"]) if v < LOST})
    steps = list(expert.values())
    out += ["", f"The scripted expert on the {len(seeds)} seeds: {sum(steps) / len(steps):.0f} steps on average; "
            f"on the {len(lost_any)} seeds under {LOST} in any run: "
            f"{sum(expert[str(s)] for s in lost_any) / max(1, len(lost_any)):.0f} on average."]
    for factor, steps in (paced or {}).items():
        out.append(f"At pace {float(factor):g} (the demonstrator of the runs marked so) the expert takes "
                   f"{sum(steps.values()) / len(steps):.0f} steps on average on the same seeds.")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", type=Path, nargs="+")
    ap.add_argument("--checkpoint", choices=("latest", "best"), default="latest")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--long", type=int, default=600, help="the longer episode, in steps")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    name = f"{args.checkpoint}.pt"
    for run_dir in args.run_dirs:
        if not (run_dir / "checkpoints" / name).is_file() or not (run_dir / "config.yaml").is_file():
            sys.exit(f"time_outs.py: {run_dir} has no checkpoints/{name} and config.yaml (a finished imf trial is needed)")
    if args.episodes < 1:
        sys.exit(f"time_outs.py: --episodes {args.episodes}: give 1 or more selection seeds")
    seeds = list(range(SELECTION.start, SELECTION.start + args.episodes))
    task = int(yaml.safe_load((args.run_dirs[0] / "config.yaml").read_text())["eval"]["max_steps"])
    if args.long <= task:
        sys.exit(f"time_outs.py: --long {args.long}: give more steps than the task's {task}")
    torch.set_num_threads(1)
    rows = [run_row(run_dir, name, seeds, task, args.long) for run_dir in args.run_dirs]
    expert = expert_steps(seeds)
    paced = {str(factor): expert_steps(seeds, factor) for factor in sorted({r["expert_pace"] for r in rows} - {1.0})}
    lines = lines_for(rows, seeds, expert, paced)
    print("\n".join(lines))
    if args.no_write:
        return 0
    path = RESULTS_DIR / f"time_outs_{rows[0]['obs']}.json"
    path.write_text(json.dumps({"seeds": seeds, "lost_below": LOST, "runs": rows, "expert_steps": expert,
                                "expert_steps_at_pace": paced}, indent=1) + "\n")
    title = f"## Time-outs, {rows[0]['obs']} (benchmarks/learning/time_outs.py)"
    write_section(title, [title, "", f"`python benchmarks/learning/time_outs.py RUN_DIR ...`: each run's {name} on "
                          f"{len(seeds)} selection seeds from {SELECTION.start} at the task's {task} steps and at "
                          f"{args.long}, its own sampling noise, 1 simulator worker; shortfall: 1 minus the mean "
                          f"score; steps over the expert's: over the seeds a run finishes given {args.long} "
                          f"steps, the median of its steps over the plain scripted expert's. Chooses nothing. JSON: "
                          f"benchmarks/learning_results/{path.name}.", "", *lines])
    return 0


if __name__ == "__main__":
    sys.exit(main())
