"""Does it learn PushT? imf, flow and ddpm on one backbone and one budget, claimed on the holdout.

    python benchmarks/learning/learning.py                      # keypoints, imf-1 / flow-1 / ddpm-100, seed 42
    python benchmarks/learning/learning.py --minutes 15 --runs imf:1:42,imf:1:43,ddpm:100:42,ddpm:100:43 --threads 1
                                                       # objective:steps[:training seed]
    python benchmarks/learning/learning.py --obs image --minutes 60 --runs imf:1:42,imf:1:43 --parallel 2 --threads 1
    python benchmarks/learning/learning.py --obs image --samples 2.34e6 --runs ddpm:100:42,flow:1:42 --parallel 2 --threads 1 \
        --set training.snapshot_every=10 --with image_preset  # equal compute beside the preset's own imf runs
    python benchmarks/learning/learning.py --collect runs/learning/keypoints   # runs already trained: look, record
    python benchmarks/learning/learning.py --collect runs/preset --name image_preset   # another record beside image.json
    python benchmarks/learning/learning.py --collect runs/more/keypoints --add  # new runs join keypoints.json's, which stay
    python benchmarks/learning/learning.py --obs image --runs imf:2:42 --no-look --name image_k12  # train and score
                              # on the selection seeds only, recorded as image_k12.json with no holdout fields;
                              # choose, commit, then --collect DIR --name image_k12 looks and fills them in

Each run is a real `imf trial` of the CPU preset (pusht_lowdim_cpu, or pusht_image_cpu for
--obs image) with `training.time_budget_s` on the cpu clock (CPU seconds / torch threads: the
training an idle machine gives, unchanged when the machine is shared; the preset's own budget
unless --minutes says otherwise), or with --samples a fixed
number of training samples (the same on any machine; benchmarks/learning/sizing.py), nice'd. Equal compute
across objectives whose step costs differ is samples in the ratio of their CPU a sample
(benchmarks/speed/image_step.py measures it); --with NAME puts runs recorded before (e.g. the preset's
own imf runs) beside the new ones in one record. The seeds, each
with one job (imf/config/eval_seeds.py): the trial's rollouts on the 50 test seeds choose its
best checkpoint; best.pt is re-scored on 200 selection seeds (final_eval.json), and looked at
once on 200 holdout seeds (holdout.json): the holdout is what docs/learning.md quotes, and nothing here is
chosen by it. The last checkpoint is also re-scored with another noise seed, timed: the seconds
of a 50-episode evaluation. Writes docs/learning_curves.png (or learning_curves_image.png:
score and success against training minutes and against training samples), the table section of
benchmarks/RESULTS.md and benchmarks/learning_results/<obs>.json (benchmarks/learning/run_record.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import RESULTS, RUNS, write_section  # noqa: E402
from run_record import figure_name, read_record, read_records  # noqa: E402
from sizing import sizing  # noqa: E402

import holdout_ledger  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EPISODES = 200  # the final checkpoint on this many selection seeds, and on as many holdout seeds
PRESETS = {"keypoints": "pusht_lowdim_cpu", "image": "pusht_image_cpu"}
RESULTS_DIR = ROOT / "benchmarks" / "learning_results"


def run_name(objective: str, steps: int, seed: int | None) -> str:
    return f"{objective}-{steps}" + (f"-s{seed}" if seed is not None else "")


def _imf(args: list[str], threads: int | None, log: Path | None = None, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    cmd = ["nice", "-n", "10", sys.executable, "-m", "imf", *args]
    if log is None:
        return subprocess.run(cmd, cwd=ROOT, env=env, text=True, capture_output=True, **kw)
    with open(log, "a") as out:
        return subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, **kw)


def train(out: Path, obs: str, objective: str, steps: int, seed: int | None, sized: list[str],
          threads: int | None, extra: list[str], look: bool = True) -> Path:
    """One trial, then best.pt on the selection seeds and (``look``) one look at the holdout."""
    name = run_name(objective, steps, seed)
    steps_key = "objective.options.steps" if objective == "ddpm" else "objective.sample_steps"
    args = ["trial", PRESETS[obs], f"objective.name={objective}", f"{steps_key}={steps}",
            *sized, "logging.trackers=none",
            *([f"training.seed={seed}"] if seed is not None else []), *extra, "--out", str(out / name),
            "--store", "none", "--final-eval", str(EPISODES), *(["--holdout"] if look else []),
            "--id", f"learning-{obs}-{name}"]
    print("$ imf " + " ".join(args), flush=True)
    if _imf(args, threads, out / f"{name}.out").returncode != 0:
        sys.exit(f"learning.py: trial failed, see {out / name}.out")
    return out / name


def scored_checkpoint(run_dir: Path) -> str:
    """The checkpoint the run's final evaluation scored (final_eval.json), relative to the run."""
    final = run_dir / "final_eval.json"
    return json.loads(final.read_text())["checkpoint"] if final.is_file() else "checkpoints/best.pt"


def rescore_final(run_dir: Path, checkpoint: str) -> None:
    """--final-checkpoint: the run's selection scores again at ``checkpoint`` (best or latest), for runs
    trained before their preset's eval.final_checkpoint changed; nothing to do where it already is."""
    from imf.config import load_resolved
    from imf.train import run_final_eval

    if not (run_dir / "final_eval.json").is_file():
        sys.exit(f"learning.py: --final-checkpoint {checkpoint}: {run_dir} has no final_eval.json (train it with "
                 f"--final-eval N) to score again")
    if Path(scored_checkpoint(run_dir)).stem == checkpoint:
        return
    episodes = json.loads((run_dir / "final_eval.json").read_text())["episodes"]
    eval_cfg = replace(load_resolved(run_dir / "config.yaml").eval, final_checkpoint=checkpoint)
    if run_final_eval(run_dir, episodes, eval_cfg, device="cpu") is None:
        sys.exit(f"learning.py: --final-checkpoint {checkpoint}: {run_dir} has no {checkpoint}.pt")


def look_at_holdout(run_dir: Path, threads: int | None) -> None:
    """A run trained before its look (--collect): one look at the holdout, once, at the checkpoint its
    final evaluation scored."""
    if (run_dir / "holdout.json").is_file():
        return
    proc = _imf(["eval", str(run_dir / scored_checkpoint(run_dir)), "--holdout", "--n-test", str(EPISODES),
                 "--device", "cpu"], threads)
    if proc.returncode != 0:
        sys.exit(f"learning.py: imf eval --holdout of {run_dir} failed: {proc.stderr.strip()[-400:]}")


def eval_seconds(run_dir: Path, threads: int | None) -> float:
    """The wall seconds of a 50-episode `imf eval` of the last checkpoint (another noise seed)."""
    started = time.perf_counter()
    proc = _imf(["eval", str(run_dir / "checkpoints" / "latest.pt"), "--noise-seed", "1", "--device", "cpu",
                 "--json"], threads)
    if proc.returncode != 0:
        sys.exit(f"learning.py: imf eval of {run_dir} failed: {proc.stderr.strip()[-400:]}")
    return time.perf_counter() - started


def record_of(run_dir: Path, threads: int | None) -> dict:
    record = read_record(run_dir)
    record["label"] = (f"{record['objective']}, {record['sample_steps']} step"
                       f"{'s' if record['sample_steps'] != 1 else ''}, seed {record['seed']}")
    record["eval_s"] = eval_seconds(run_dir, threads)
    return record


def joined_records(names: list[str]) -> list[dict]:
    """The imf runs of committed records, each marked with the record it came from."""
    records = []
    for name in names:
        path = RESULTS_DIR / f"{name}.json"
        if not path.is_file():
            sys.exit(f"learning.py: --with {name}: no record {path}")
        records += [{**r, "record": r.get("record") or f"{name}.json"}
                    for r in read_records(path) if r.get("objective") == "imf"]
    return records


def added_records(name: str, new: list[dict]) -> list[dict]:
    """--add: the runs of the committed record NAME.json, each marked with the record and commit it
    came from ("from": its run folder is gone), and the new runs with them; a new run replaces an
    old one of the same id. Grouped by objective in the order they first appear, then by seed."""
    path = RESULTS_DIR / f"{name}.json"
    if not path.is_file():
        sys.exit(f"learning.py: --add: no record {path} to add to")
    git = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h", "--", str(path)],
                         capture_output=True, text=True)
    where = f"{name}.json at {git.stdout.strip() or 'uncommitted'}"
    ids = {r["id"] for r in new}
    old = [{**r, "from": r.get("from") or where} for r in read_records(path) if r["id"] not in ids]
    merged = [*old, *new]
    order = list(dict.fromkeys(r["objective"] for r in merged))
    return sorted(merged, key=lambda r: (order.index(r["objective"]), r.get("seed") is None, r.get("seed") or 0))


SIZED_HERE = ("objective.name", "objective.sample_steps", "objective.options.steps", "training.time_budget_s",
              "training.budget_clock", "training.num_epochs", "logging.trackers", "training.seed")


def shared_sets(records: list[dict]) -> list[str]:
    """The overrides every run shares beyond those learning.py sets itself: its --set, as the run saved it."""
    common = [o for o in records[0].get("overrides", []) if o.split("=", 1)[0] not in SIZED_HERE]
    return [o for o in common if all(o in r.get("overrides", []) for r in records[1:])]


def _pm(value: float | None, se: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}" + ("" if se is None else f" ± {se:.{digits}f}")


def table(records: list[dict], obs: str, machine: str | None, name: str, looked: bool = True) -> list[str]:
    where = machine or f"{platform.machine()}, {os.cpu_count()} cores"
    minutes = sorted({round(r["budget_s"] / 60, 1) for r in records if r["budget_s"]})
    sized = [f"{', '.join(f'{m:g}' for m in minutes)} training minutes a run on the cpu clock (each run's own "
             f"CPU seconds: the same training when runs share the cores)"] if minutes else []
    if any(not r["budget_s"] for r in records):
        sized.append("a run without a budget trained a fixed number of samples (--samples; CPU min: its own CPU "
                     "minutes of training)")
    joined = sorted({r["record"] for r in records if r.get("record")})
    kept = sorted({r["from"] for r in records if r.get("from")})
    title = f"## Learning, {obs} observations" + (f", {name}" if name != obs else "")
    lines = [f"{title} (benchmarks/learning/learning.py)", "",
             f"`python benchmarks/learning/learning.py --obs {obs}{f' --name {name}' if name != obs else ''}"
             f"{''.join(f' --set {o}' for o in shared_sets(records))}{'' if looked else ' --no-look'}` on {where}"
             + (f" (the runs from {', '.join(joined)} were trained earlier, on their own record's machine)" if joined else "")
             + (f" (runs marked from {' and '.join(kept)} in the JSON were recorded there before; their run folders "
                f"are gone)" if kept else "")
             + f"; {'; '.join(sized)}; one torch thread a run, nice'd, beside other work. Best test: the "
             f"rollout (50 test seeds) that chose best.pt, its score ± SE and success. Selection and "
             f"holdout: {scored_name(records)} on {EPISODES} selection seeds (500000..) and {EPISODES} holdout seeds "
             f"(900000..), mean coverage ± SE and success ± SE; "
             + ("each run looked at the holdout once. " if looked else
                "no run looked at the holdout (--no-look): its selection columns choose a setting, so they are "
                "not claims, and `--collect` fills in the holdout columns of the runs chosen. ")
             + "Eval s: one 50-episode `imf eval` on the shared machine, process start included.", "",
             "| run | steps | samples | CPU min | best test | best test success | selection coverage | selection success "
             "| holdout coverage | holdout success | eval s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['label']} | {r['steps']} | {r['samples'] / 1e6:.2f}M | {r['train_min']:.1f} | "
                     f"{_pm(r['best_test_score'], r['best_test_score_se'])} | {r['best_test_success']:.2f} | "
                     f"{_pm(r.get('selection_score'), r.get('selection_score_se'))} | "
                     f"{_pm(r.get('selection_success'), r.get('selection_success_se'))} | "
                     f"{_pm(r.get('holdout_score'), r.get('holdout_score_se'))} | "
                     f"{_pm(r.get('holdout_success'), r.get('holdout_success_se'))} | {r['eval_s']:.1f} |")
    return lines


def scored_name(records: list[dict]) -> str:
    """The checkpoint the records' selection and holdout columns score: best.pt unless every run's final
    evaluation scored another (records from before the field: best.pt)."""
    names = {Path(r.get("selection_checkpoint") or "best.pt").name for r in records}
    return names.pop() if len(names) == 1 else "each run's final checkpoint (selection_checkpoint in the JSON)"


def plot(records: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharey="row")
    for r in records:
        curve = r["curve"]
        for col, x in enumerate(([c[0] for c in curve], [c[1] / 1e6 for c in curve])):
            axes[0][col].plot(x, [c[2] for c in curve], marker="o", ms=3, label=r["label"])
            axes[1][col].plot(x, [c[3] for c in curve], marker="o", ms=3, label=r["label"])
    for row, name in enumerate(("test_mean_score (50 test seeds)", "success rate (50 test seeds)")):
        for col, xlabel in enumerate(("training minutes (cpu clock)", "training samples (millions)")):
            ax = axes[row][col]
            ax.set_xlabel(xlabel)
            ax.set_ylabel(name)
            ax.set_ylim(0, 1.05)
            ax.set_xlim(left=0)
            ax.grid(alpha=0.3)
    axes[0][0].legend(loc="lower right", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def parse_runs(text: str) -> list[tuple[str, int, int | None]]:
    runs = []
    for item in text.split(","):
        name, steps, *seed = item.split(":")
        if not steps.isdigit() or int(steps) < 1 or len(seed) > 1 or (seed and not seed[0].isdigit()):
            sys.exit(f"learning.py: --runs item {item!r}: expected objective:steps[:seed], e.g. imf:1 or imf:1:43")
        runs.append((name, int(steps), int(seed[0]) if seed else None))
    return runs


def check_no_look(name: str | None, collect: Path | None, joined: list[str]) -> None:
    """--no-look's record: named, its own runs only, and never in place of a record of looks."""
    if collect:
        sys.exit("learning.py: --no-look trains without a look; --collect looks at runs already trained: give one")
    if joined:
        sys.exit("learning.py: --no-look --with: a record of runs not looked at takes no runs of a record of looks")
    if not name:
        sys.exit("learning.py: --no-look records the selection seeds' numbers: give the record a --name, "
                 "e.g. --name image_k12 (learning_results/image_k12.json)")
    path = RESULTS_DIR / f"{name}.json"
    looked = name in holdout_ledger.BEST or path.is_file() and any(
        r.get("holdout_score") is not None for r in read_records(path))
    if looked:
        sys.exit(f"learning.py: --no-look --name {name}: {path.name} holds holdout looks, which a record of runs "
                 f"not looked at would replace; give another --name")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--obs", choices=sorted(PRESETS), default="keypoints")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--minutes", type=float, default=None, help="training minutes per run (cpu clock; default: "
                      "the preset's own training.time_budget_s)")
    size.add_argument("--samples", type=float, default=None, help="training samples per run instead (e.g. 1.9e6): "
                      "whole epochs nearest it, the same on any machine and load; the cpu clock only times it")
    parser.add_argument("--runs", default="imf:1:42,flow:1:42,ddpm:100:42", help="objective:steps[:seed], comma-separated")
    parser.add_argument("--out", type=Path, default=Path("runs/learning"))
    parser.add_argument("--collect", type=Path, help="record the trained run folders under this folder instead")
    parser.add_argument("--machine", help="where it ran, for the table (default: this machine's facts)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config override for every run")
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time")
    parser.add_argument("--threads", type=int, help="torch threads per run (the cpu clock divides by it)")
    parser.add_argument("--name", help="the record's name: <name>.json, learning_curves_<name>.png and the "
                        "section's title (default: the observations, keypoints or image)")
    parser.add_argument("--with", dest="joined", action="append", default=[], metavar="NAME",
                        help="the imf runs of a committed record (learning_results/NAME.json) join this one as "
                        "they are, e.g. the preset's own runs beside ddpm and flow trained to match them")
    parser.add_argument("--add", action="store_true", help="keep the runs of the committed record this writes "
                        "(<name>.json), each marked with where it came from; the new runs join them, e.g. a missing "
                        "seed trained later")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave RESULTS.md and docs/ alone")
    parser.add_argument("--no-look", action="store_true", help="train and score on the selection seeds only, "
                        "recorded as --name's JSON with no holdout fields: a setting is chosen on them first, then "
                        "--collect looks at the holdout")
    parser.add_argument("--final-checkpoint", choices=("best", "latest"), help="with --collect: score each run's "
                        "selection seeds again at this checkpoint before its look (runs trained before their preset's "
                        "eval.final_checkpoint changed); the look is at the checkpoint the final evaluation scored")
    args = parser.parse_args()
    if args.final_checkpoint and not args.collect:
        sys.exit("learning.py: --final-checkpoint re-scores runs already trained: give --collect DIR (a new run "
                 "scores its config's eval.final_checkpoint; --set eval.final_checkpoint=latest)")
    if args.no_look:
        check_no_look(args.name, args.collect, args.joined)
    if args.minutes is not None and not args.minutes > 0 or args.parallel < 1:
        sys.exit(f"learning.py: --minutes must be > 0 and --parallel >= 1, got {args.minutes} and {args.parallel}")
    joined = joined_records(args.joined)  # before any training or look: a bad name costs nothing
    cores = os.cpu_count() or 1
    if args.parallel * (args.threads or 1) > cores:
        print(f"learning.py: warning: {args.parallel} runs x {args.threads or 1} thread(s) on {cores} cores: "
              f"runs that take turns on a core can get fewer samples out of a CPU-second, so the cpu "
              f"clock may not make them equal", file=sys.stderr)
    if args.collect:
        run_dirs = sorted(d for d in args.collect.iterdir() if (d / "summary.json").is_file())
        if not run_dirs:
            sys.exit(f"learning.py: no finished run folder under {args.collect}")
        for run_dir in run_dirs:
            if args.final_checkpoint:
                rescore_final(run_dir, args.final_checkpoint)
            look_at_holdout(run_dir, args.threads)
    else:
        sized = sizing("learning.py", PRESETS[args.obs], args.set, args.minutes, args.samples)
        out = (args.out / args.obs).resolve()
        out.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(args.parallel) as pool:
            run_dirs = list(pool.map(lambda run: train(out, args.obs, *run, sized, args.threads, args.set,
                                                       look=not args.no_look), parse_runs(args.runs)))
    records = [*joined, *(record_of(d, args.threads) for d in run_dirs)]
    if args.no_look:
        ledger = holdout_ledger.load_from(RESULTS_DIR)  # a run may be looked at later, under another record
        for r in records:
            r["holdout_looks"] = holdout_ledger.looks_of(ledger, r)
    name = args.name or records[0]["obs"]
    if args.add:
        records = added_records(name, records)
    lines = table(records, records[0]["obs"], args.machine, name, looked=not args.no_look)
    print("\n".join(lines))
    if not args.no_write:
        obs = records[0]["obs"]
        if not args.no_look:  # docs/ draws what is claimed; a selection record's curves are in its JSON
            plot(records, ROOT / "docs" / figure_name(name), f"PushT from {obs}: one torch thread a run, training "
                 f"minutes on the cpu clock" + (" of each run's own machine" if args.joined else ""))
        write_section(lines[0], lines, RUNS if args.no_look else RESULTS)  # what chose goes with the runs
        (RESULTS_DIR / f"{name}.json").write_text(json.dumps(records, indent=1) + "\n")
    if args.no_look:
        print(f"learning.py: trained without a look at the holdout, recorded as {name}.json; choose on the "
              f"selection seeds, then `--collect {out} --name {name}` looks once and fills in the holdout")


if __name__ == "__main__":
    main()
