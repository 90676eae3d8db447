"""What buys learning per CPU-second: one change at a time against the same baseline and budget.

    python benchmarks/learning/ablation.py run NAME [key=value ...] [--obs image] [--minutes 30 | --samples 6e5]
                                 [--threads 1] [--nice 10] [--out DIR]
    python benchmarks/learning/ablation.py table DIR [--baseline NAME] [--name image_samples] [--no-write]

`run` trains one `imf trial` of a preset (--obs keypoints: pusht_lowdim_cpu, the default; --obs
image: pusht_image_cpu; or --preset NAME) with the overrides, for a
budget on the cpu clock (CPU seconds / torch threads), or with --samples for a fixed number of
training samples: the cpu clock makes runs equal in CPU time, not in samples, which the machine
and the load beside a run move by a quarter or more (benchmarks/RUNS.md, "Ablations, image:
what they say"); a change's own cost per sample is image_step.py's to measure. Nice'd (--nice); it
re-scores its best.pt on 200 selection seeds (500000..). A run's best checkpoint is chosen on the
50 test seeds (its rollouts); a change is adopted on the selection seeds. The holdout
(900000..) is never looked at here: a preset chosen by this table is claimed by
benchmarks/learning/learning.py, on the holdout, after the choice.
`table` reads every run folder under DIR into the ablation table of benchmarks/RUNS.md and
benchmarks/learning_results/ablations_<obs>.json, beside the rows already committed there (their
folders need not exist any more; a folder measured again replaces its row; --only drops them):
change, steps, samples/s, best test score and success (± SE over the 50 test seeds),
selection-seed coverage and success (± SE over 200); the holdout fields are null, and
holdout_looks is the holdout ledger's count of looks at the run made elsewhere (benchmarks/learning/holdout_ledger.py).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import holdout_ledger

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402
from run_record import read_record  # noqa: E402
from sizing import sizing  # noqa: E402

from imf.store import observed_status  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "benchmarks" / "learning_results"
PRESETS = {"keypoints": "pusht_lowdim_cpu", "image": "pusht_image_cpu"}
# overrides that say how a run was measured or kept, not what it trains
NOT_A_CHANGE = ("training.time_budget_s=", "training.budget_clock=", "logging.swanlab=", "logging.trackers=",
                "training.snapshot_every=", "training.num_epochs=")
SELECTION = 200  # best.pt on this many selection seeds; ablations never look at the holdout
UNFINISHED = ("running", "interrupted")  # still training, or its process is gone: its budget was not spent
HOLDOUT_FIELDS = ("holdout_score", "holdout_score_se", "holdout_success", "holdout_success_se")


def run(name: str, overrides: list[str], sized: list[str], threads: int, out: Path, preset: str,
        nice: int = 10) -> int:
    cmd = [sys.executable, "-m", "imf", "trial", preset, *sized, "logging.trackers=none", *overrides,
           "--out", str(out / name), "--id", name, "--store", "none", "--final-eval", str(SELECTION)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.out", "w") as log:
        print("$ " + " ".join(cmd[1:]), flush=True)
        return subprocess.call(["nice", "-n", str(nice), *cmd], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)


def read_run(folder: Path) -> dict | None:
    """One run folder's record (benchmarks/learning/run_record.py) with its name and change; None when
    the folder holds no finished, scored run."""
    if not (folder / "summary.json").is_file():
        return None
    status = observed_status(json.loads((folder / "summary.json").read_text()).get("status"), folder)
    if status in UNFINISHED:  # before its record: a run just begun has no logs yet
        print(f"ablation.py: skipped {folder.name}: {status} (a row is a finished run)", file=sys.stderr)
        return None
    record = read_record(folder)
    if record["best_test_score"] is None:
        return None
    change = [o for o in record["overrides"] if not o.startswith(NOT_A_CHANGE)]
    # named by its folder: `run NAME` names both alike, and a run trained elsewhere (learning.py's
    # folders, whose trial ids repeat across settings) is named by where it is put
    return {"name": folder.name, "change": change, **record,
            "samples_s": record["samples"] / max(1e-9, record["train_min"] * 60)}


def _pm(value: float | None, se: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" + (f" ± {se:.{digits}f}" if se is not None else "")


def committed(name: str) -> list[dict]:
    path = RESULTS_DIR / f"ablations_{name}.json"
    return json.loads(path.read_text()) if path.is_file() else []


def table(folder: Path, baseline: str | None, write: bool, only: bool = False, name: str | None = None) -> str:
    """The table of every scored run under ``folder`` beside the committed rows of
    ablations_<name>.json (``name``: the runs' observations unless given)."""
    if not folder.is_dir():
        sys.exit(f"ablation.py: {folder} is not a folder of run folders")
    entries = [e for e in (read_run(d) for d in sorted(folder.iterdir()) if d.is_dir()) if e]
    if not entries:
        sys.exit(f"ablation.py: no scored run folders under {folder}")
    if not only:
        again = {e["name"] for e in entries}
        entries += [e for e in committed(name or entries[0]["obs"]) if e["name"] not in again]
    ledger = holdout_ledger.load_from(RESULTS_DIR)
    for e in entries:  # the fields of every learning record; an ablation never looks at the holdout, but
        # its run may have been looked at since (a holdout curve, a preset's record): the ledger counts
        e.update({k: None for k in HOLDOUT_FIELDS}, holdout_looks=holdout_ledger.looks_of(ledger, e))
    entries.sort(key=lambda e: (e["name"] != baseline, e["name"]))
    name = name or entries[0]["obs"]
    section = f"## Ablations, {name.replace('_', ', ')} (benchmarks/learning/ablation.py)"
    if all(e.get("budget_s") for e in entries):
        sized = ("budget on the cpu clock (each run's own CPU seconds: runs sharing the 2 cores get the same CPU "
                 "time, not the same samples, which the change's own cost, the load beside it and the machine "
                 "move: see samples/s)")
    else:
        sized = ("a run without a budget trained a fixed number of samples (`--samples`: equal across machines "
                 "and loads; samples/s over its own CPU seconds, the change's own cost beside the load)")
    lines = [section, "", f"`python benchmarks/learning/ablation.py run NAME key=value ...` per row, then "
             f"`table`; 1 torch thread per run, {sized}, best.pt re-scored on {SELECTION} selection seeds "
             f"(500000..): these columns chose the settings, so they are not claims. Scores are mean coverage "
             f"± SE; best success: the best test rollout's (50 test seeds). JSON: "
             f"benchmarks/learning_results/ablations_{name}.json.",
             "", "| run | change | steps | samples/s | best test score | best success | selection coverage | selection success |",
             "|---|---|---|---|---|---|---|---|"]
    for e in entries:
        change = ", ".join(f"`{c}`" for c in e["change"]) or (
            "(baseline)" if e["name"] == baseline else "(the preset of its day, unchanged)")
        lines.append(f"| {e['name']} | {change} | {e['steps']} | {e['samples_s']:.0f} | "
                     f"{_pm(e['best_test_score'], e['best_test_score_se'])} | {e['best_test_success']:.2f} | "
                     f"{_pm(e.get('selection_score'), e.get('selection_score_se'))} | "
                     f"{_pm(e.get('selection_success'), e.get('selection_success_se'), 3)} |")
    text = "\n".join(lines) + "\n"
    if write:
        write_section(section, text)
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / f"ablations_{name}.json").write_text(json.dumps(entries, indent=1) + "\n")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("name")
    r.add_argument("overrides", nargs="*")
    size = r.add_mutually_exclusive_group()
    size.add_argument("--minutes", type=float, default=30.0, help="CPU-minutes of training (the cpu clock)")
    size.add_argument("--samples", type=float, default=None,
                      help="training samples instead (e.g. 6e5): equal across machines and loads")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--nice", type=int, default=10, help="the run's niceness (0: the load a test run is measured beside)")
    r.add_argument("--obs", choices=sorted(PRESETS), default="keypoints")
    r.add_argument("--preset", help="a preset instead of --obs's")
    r.add_argument("--out", type=Path, default=ROOT / "runs" / "ablations")
    t = sub.add_parser("table")
    t.add_argument("folder", type=Path)
    t.add_argument("--baseline", default=None)
    t.add_argument("--no-write", action="store_true")
    t.add_argument("--only", action="store_true", help="only the folders under DIR: drop the committed rows")
    t.add_argument("--name", help="the table's name: ablations_<name>.json and its section (default: the "
                   "runs' observations), e.g. image_samples for a batch at equal samples")
    args = parser.parse_args()
    if args.what == "run":
        preset = args.preset or PRESETS[args.obs]
        sized = sizing("ablation.py", preset, args.overrides, args.minutes, args.samples)
        sys.exit(run(args.name, args.overrides, sized, args.threads, args.out, preset, args.nice))
    print(table(args.folder, args.baseline, not args.no_write, args.only, args.name))


if __name__ == "__main__":
    main()
