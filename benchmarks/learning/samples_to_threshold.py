"""Training samples to a coverage and success threshold on the holdout: the figure that carries to a GPU.

    python benchmarks/learning/samples_to_threshold.py RUN_DIR [RUN_DIR ...] [--points 8] [--episodes 100]
    python benchmarks/learning/samples_to_threshold.py RUN_DIR ... --coverage 0.80 --success 0.20 --no-write
    python benchmarks/learning/samples_to_threshold.py RUN_DIR ... --only   # drop the committed curves

Each RUN_DIR is a finished `imf trial` that kept snapshots (training.snapshot_every=N:
checkpoints/snapshots/epoch=NNNN.pt). Of each run, --points snapshots evenly spread over its
samples (the last one always) are scored once on --episodes holdout seeds (900000..) with
`imf eval --holdout`: each look is appended to the run's holdout.json as a curve point, which
the run's claim (its latest look at best.pt) and the report's count of checkpoints looked at
leave out. A snapshot already looked at is read back, not scored again. Nothing here chooses a
checkpoint: the curve is read, not searched. The curves already in samples_to_threshold.json stay
(their run folders need not exist any more); a RUN_DIR's new curve replaces its old one; --only
keeps just the RUN_DIRs given.

Samples are optimizer steps x batch size: the same number on any device, which is why a GPU
user can read it. "Reached" is the first point at or above the threshold; the curve is noisy
(the SE of each point is drawn), so the first crossing is an optimistic reading, and the next
point says whether it held. LeRobot's Diffusion Policy (benchmarks/learning_results/
references.json) is quoted, not re-run. Writes benchmarks/learning_results/samples_to_threshold.json,
docs/samples_to_threshold.png and the section of benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402
from run_record import log_rows, read_record  # noqa: E402

from imf.store import samples_trained  # noqa: E402
from imf.store import CHECKPOINTS, SNAPSHOTS, read_looks  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "benchmarks" / "learning_results"


def snapshots(run_dir: Path) -> list[tuple[int, Path]]:
    """(samples, path) of each kept snapshot, by samples: its 0-based epoch (the file's name) read
    in logs.json.txt, whose samples (or global_step times the batch) it had trained, without
    loading the file."""
    folder = run_dir / CHECKPOINTS / SNAPSHOTS
    if not folder.is_dir():
        sys.exit(f"samples_to_threshold.py: {run_dir} kept no snapshots ({folder} is missing); "
                 f"train it with training.snapshot_every=N")
    batch = yaml.safe_load((run_dir / "config.yaml").read_text())["training"]["batch_size"]
    trained = {r["epoch"]: samples_trained(r, batch) for r in log_rows(run_dir)}
    found = []
    for path in sorted(folder.glob("epoch=*.pt")):
        epoch = int(path.stem.split("=", 1)[1])
        if epoch not in trained:
            sys.exit(f"samples_to_threshold.py: {path}: epoch {epoch} is not in {run_dir / 'logs.json.txt'}")
        found.append((trained[epoch], path))
    return sorted(found)


def spread(found: list[tuple[int, Path]], points: int) -> list[tuple[int, Path]]:
    """``points`` snapshots evenly spread over the samples, the last always among them."""
    if len(found) <= points:
        return found
    last = found[-1][0]
    chosen = {min(found, key=lambda f: abs(f[0] - last * (i + 1) / points))[1] for i in range(points)}
    return [f for f in found if f[1] in chosen]


def look(run_dir: Path, path: Path, episodes: int, threads: int) -> dict:
    """The holdout look at ``path``: read back when holdout.json has one of this size, else scored."""
    name = path.relative_to(run_dir).as_posix()
    for earlier in read_looks(run_dir).curve:
        if earlier["checkpoint"] == name and earlier["episodes"] == episodes:
            return earlier
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    cmd = ["nice", "-n", "10", sys.executable, "-m", "imf", "eval", str(path), "--holdout",
           "--n-test", str(episodes), "--device", "cpu", "--json"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, text=True, capture_output=True)
    if proc.returncode != 0:
        sys.exit(f"samples_to_threshold.py: imf eval --holdout of {path} failed: {proc.stderr.strip()[-400:]}")
    return next(e for e in reversed(read_looks(run_dir).curve) if e["checkpoint"] == name)


def first_reach(points: list[dict], coverage: float, success: float) -> dict:
    def first(ok) -> int | None:
        return next((p["samples"] for p in points if ok(p)), None)
    return {"coverage": first(lambda p: p["coverage"] >= coverage),
            "success": first(lambda p: p["success"] >= success),
            "both": first(lambda p: p["coverage"] >= coverage and p["success"] >= success)}


def curve_of(run_dir: Path, points: int, episodes: int, threads: int, coverage: float, success: float) -> dict:
    if not (run_dir / "summary.json").is_file():
        sys.exit(f"samples_to_threshold.py: {run_dir} is not a run folder (no summary.json)")
    kept = snapshots(run_dir)
    record = read_record(run_dir)
    curve = []
    for samples, path in spread(kept, points):
        seen = look(run_dir, path, episodes, threads)
        curve.append({"checkpoint": path.relative_to(run_dir).as_posix(), "samples": samples,
                      "coverage": seen["mean"], "coverage_se": seen["se"],
                      "success": seen["success_rate"], "success_se": seen["success_se"]})
    steps = f"{record['sample_steps']} step{'s' if record['sample_steps'] != 1 else ''}"
    return {"run": str(run_dir), "obs": record["obs"], "objective": record["objective"],
            "sample_steps": record["sample_steps"], "seed": record["seed"], "budget_s": record["budget_s"],
            "label": f"{record['obs']}: {record['objective']}, {steps}, seed {record['seed']} ({record['id']})",
            "episodes": episodes, "points": curve, "reached": first_reach(curve, coverage, success)}


# the learning.py records whose runs' claims stand beside the curves, with their observations
LEARNING_RECORDS = (("keypoints", "keypoints"), ("keypoints", "keypoints30"), ("image", "image_twostep"),
                    ("image", "image"), ("image", "image_preset"), ("image", "image_preset30"))


def _budget_minutes(claim: dict) -> str:
    return f"{claim['budget_s'] / 60:.0f}" if claim["budget_s"] else "none: a number of samples"


def merged(new: list[dict], committed: list[dict]) -> list[dict]:
    """The committed curves whose runs were not measured again, then the new ones, in order."""
    again = {c["run"] for c in new}
    return [c for c in committed if c["run"] not in again] + new


def claimed_points() -> list[dict]:
    """Every learning.py run's claim (best.pt, one holdout look of 200) at the samples of its best
    rollout: single points beside the curves, from the LEARNING_RECORDS in benchmarks/learning_results/."""
    points = []
    for obs, name in LEARNING_RECORDS:
        path = RESULTS_DIR / f"{name}.json"
        for r in json.loads(path.read_text()) if path.is_file() else []:
            if r.get("holdout_score") is None or not r["curve"] or r.get("record"):
                continue  # no claim, or a run joined from the record where it is claimed already
            best = max(r["curve"], key=lambda c: c[2])  # [minutes, samples, score, success]; the first max
            points.append({"label": f"{name}.json: {r['label']} (best.pt)", "obs": obs, "objective": r["objective"],
                           "seed": r["seed"], "budget_s": r["budget_s"], "samples": best[1],
                           "coverage": r["holdout_score"], "coverage_se": r["holdout_score_se"],
                           "success": r["holdout_success"], "success_se": r["holdout_success_se"],
                           "episodes": r["holdout_episodes"]})
    return points


def _millions(samples: int | None) -> str:
    return "not reached" if samples is None else f"{samples / 1e6:.2f}M"


def section(curves: list[dict], claims: list[dict], reference: dict, coverage: float, success: float) -> list[str]:
    lines = ["## Samples to a threshold (benchmarks/learning/samples_to_threshold.py)", "",
             f"Training samples (optimizer steps x batch) until a run's snapshot first scores at least "
             f"{coverage:.2f} coverage, {success:.0%} success, and both, on the holdout seeds (900000..; "
             f"the episodes per point below). Every run kept a snapshot every few epochs; of each, "
             f"evenly spread snapshots were scored once. A first crossing of a noisy curve is the "
             f"optimistic reading: the points after it show whether it held. docs/samples_to_threshold.png "
             f"draws every point with its SE.", "",
             "| run | budget (CPU-minutes) | episodes a point | points | samples trained | last point: coverage "
             f"| success | coverage >= {coverage:.2f} | success >= {success:.0%} | both |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in curves:
        last = c["points"][-1]
        budget = f"{c['budget_s'] / 60:.0f}" if c.get("budget_s") else "-"
        lines.append(f"| {c['label']} | {budget} | {c['episodes']} | {len(c['points'])} | {_millions(last['samples'])} | "
                     f"{last['coverage']:.3f} ± {last['coverage_se']:.3f} | {last['success']:.1%} ± "
                     f"{last['success_se']:.1%} | {_millions(c['reached']['coverage'])} | "
                     f"{_millions(c['reached']['success'])} | {_millions(c['reached']['both'])} |")
    lines += ["", "The runs' claims beside them (benchmarks/learning/learning.py: best.pt, chosen on the test seeds, one "
              "look at 200 holdout seeds), at the samples of the rollout that chose best.pt:", "",
              "| run | budget (CPU-minutes) | samples at best.pt | holdout coverage | holdout success |",
              "|---|---|---|---|---|"]
    lines += [f"| {c['label']} | {_budget_minutes(c)} | {c['samples'] / 1e6:.2f}M | {c['coverage']:.3f} ± "
              f"{c['coverage_se']:.3f} | {c['success']:.1%} ± {c['success_se']:.1%} |" for c in claims]
    lines += ["", f"Beside it, quoted: {reference['what']}: {reference['coverage']:.3f} coverage and "
              f"{reference['success']:.1%} success on {reference['episodes']} episodes at "
              f"{reference['samples'] / 1e6:.1f}M samples ({reference['steps']:,} steps of {reference['batch_size']}; "
              f"{reference['trained_steps']:,} trained), {reference['data']}."]
    return lines


def plot(curves: list[dict], claims: list[dict], reference: dict, coverage: float, success: float,
         path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, level, name in ((axes[0], "coverage", coverage, "holdout coverage"),
                                 (axes[1], "success", success, "holdout success rate")):
        for c in curves:
            xs = [p["samples"] / 1e6 for p in c["points"]]
            ax.errorbar(xs, [p[key] for p in c["points"]], yerr=[p[f"{key}_se"] for p in c["points"]],
                        marker="o", ms=3, capsize=2, label=c["label"])
        for obs, marker in (("keypoints", "s"), ("image", "D")):
            mine = [c for c in claims if c["obs"] == obs]
            if mine:
                ax.errorbar([c["samples"] / 1e6 for c in mine], [c[key] for c in mine],
                            yerr=[c[f"{key}_se"] for c in mine], fmt=marker, mfc="none", ms=6, capsize=2,
                            color="grey" if obs == "image" else "tab:brown", label=f"{obs}: runs' claims (best.pt)")
        ax.axhline(level, color="grey", ls="--", lw=1)
        ax.scatter([reference["samples"] / 1e6], [reference[key]], marker="*", s=120, color="black",
                   label="LeRobot Diffusion Policy (quoted)")
        ax.set_xscale("log")
        ax.set_xlabel("training samples (millions, log scale)")
        ax.set_ylabel(name)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("PushT: holdout scores against training samples (device-independent)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--points", type=int, default=8, help="snapshots scored per run")
    parser.add_argument("--episodes", type=int, default=100, help="holdout episodes per point")
    parser.add_argument("--coverage", type=float, default=0.80)
    parser.add_argument("--success", type=float, default=0.20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="print the table, leave RESULTS.md and docs/ alone")
    parser.add_argument("--only", action="store_true", help="only the RUN_DIRs given: drop the committed curves")
    args = parser.parse_args()
    if args.points < 1 or args.episodes < 1:
        sys.exit(f"samples_to_threshold.py: --points and --episodes must be >= 1, got {args.points} and {args.episodes}")
    curves = [curve_of(r.resolve(), args.points, args.episodes, args.threads, args.coverage, args.success)
              for r in args.runs]
    written = RESULTS_DIR / "samples_to_threshold.json"
    if not args.only and written.is_file():
        curves = merged(curves, json.loads(written.read_text())["curves"])
    for c in curves:  # the kept curves read at today's thresholds
        c["reached"] = first_reach(c["points"], args.coverage, args.success)
    reference = json.loads((RESULTS_DIR / "references.json").read_text())["lerobot_diffusion_pusht"]
    claims = claimed_points()
    lines = section(curves, claims, reference, args.coverage, args.success)
    print("\n".join(lines))
    if not args.no_write:
        plot(curves, claims, reference, args.coverage, args.success, ROOT / "docs" / "samples_to_threshold.png")
        write_section(lines[0], lines)
        written.write_text(json.dumps(
            {"thresholds": {"coverage": args.coverage, "success": args.success},
             "reference": reference, "curves": curves, "claims": claims}, indent=1) + "\n")


if __name__ == "__main__":
    main()
