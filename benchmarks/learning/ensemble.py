"""Top-K ensembles of a run against its best checkpoint, on the same fresh seeds.

For each run: its best.pt, the top-K weight soup and the top-K action ensemble are scored on
final_eval's N fresh seeds (500000..; the same list and the same noise seed for all three),
with mean +- SE of coverage and of success, and the paired difference to best.pt per seed.
Chunk latency: batch-1 calls of the scorer's policy adapter (imf/ensemble/score.py), the
median of each checkpoint's per-round medians over interleaved rounds, so that load changes
on a shared machine hit all of them. The runs are copied into a scratch folder first
(imf ensemble writes its checkpoints and scoreboard beside the run).

    OMP_NUM_THREADS=1 nice python benchmarks/learning/ensemble.py RUN [RUN ...] --ddpm RUN_OF_DDPM
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from imf.ensemble import chunk_latency, make_ensemble, score_selection
from imf.stats import standard_error
from imf.store import read_summary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

SECTION = "## Ensembles, keypoints (benchmarks/learning/ensemble.py)"
ROUNDS = 5


def best_of(run: Path) -> Path:
    summary = read_summary(run)
    if summary is None or not summary.checkpoints.best:
        raise SystemExit(f"{run}: no summary.json with a best checkpoint")
    return run / summary.checkpoints.best


def paired(a: list[float], b: list[float]) -> tuple[float, float]:
    diff = [x - y for x, y in zip(a, b)]
    return sum(diff) / len(diff), standard_error(diff)


def latencies(paths: dict[str, Path]) -> dict[str, float]:
    rounds: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(ROUNDS):
        for name, path in paths.items():
            rounds[name].append(chunk_latency(path, device="cpu").median_ms)
    return {name: statistics.median(values) for name, values in rounds.items()}


def measure(run: Path, scratch: Path, top: int, n: int) -> dict[str, dict]:
    copy = scratch / run.name
    shutil.copytree(run, copy)
    single = score_selection(best_of(copy), n, device="cpu")
    rows = {"best single": {"fresh": single.__dict__, "path": best_of(copy)}}
    for mode in ("weights", "actions"):
        made = make_ensemble(copy, top, mode, final_eval=n, device="cpu")
        rows[f"top-{top} {mode}"] = {"fresh": made.result["selection"], "path": made.checkpoint}
    return rows


def table(name: str, rows: dict[str, dict], lat: dict[str, float]) -> list[str]:
    base = rows["best single"]["fresh"]
    out = [f"`{name}`, {base['episodes']} fresh seeds from {base['seed_start']}, noise seed "
           f"{base['noise_seed']}:", "",
           "| policy | coverage ± SE | success ± SE | coverage vs best single (paired) | "
           "success vs best single (paired) | chunk latency |", "|---|---|---|---|---|---|"]
    for label, row in rows.items():
        f = row["fresh"]
        if label == "best single":
            vs_cov = vs_suc = "-"
        else:
            d, se = paired(f["per_seed"], base["per_seed"])
            ds, ses = paired(f["per_seed_success"], base["per_seed_success"])
            vs_cov, vs_suc = f"{d:+.4f} ± {se:.4f}", f"{ds:+.3f} ± {ses:.3f}"
        out.append(f"| {label} | {f['mean']:.4f} ± {f['se']:.4f} | {f['success_rate']:.3f} ± "
                   f"{f['success_se']:.3f} | {vs_cov} | {vs_suc} | {lat[label]:.2f} ms |")
    return out + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--ddpm", type=Path, help="a ddpm-100 run whose best.pt's chunk latency is shown beside")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines = [SECTION, ""]
    with tempfile.TemporaryDirectory(prefix="imf-ensemble-bench-") as scratch:
        for run in args.runs:
            rows = measure(run, Path(scratch), args.top, args.episodes)
            paths = {label: row["path"] for label, row in rows.items()}
            if args.ddpm is not None:
                paths["ddpm-100 best (for scale)"] = best_of(args.ddpm)
            lat = latencies(paths)
            lines += table(str(run), rows, lat)
            if args.ddpm is not None:
                lines += [f"ddpm-100 chunk latency (`{args.ddpm}` best.pt, same rounds): "
                          f"{lat['ddpm-100 best (for scale)']:.2f} ms", ""]
    lines += [f"Latency: batch-1 chunk (observation in, {args.top} chunks averaged for actions), median of "
              f"{ROUNDS} interleaved rounds of 50 timed calls after 5 warm-up calls, "
              f"{torch.get_num_threads()} torch thread, CPU, on a 2-core machine shared with other "
              "jobs (nice); paired: the mean and SE of the per-seed differences on the same seeds.",
              ""]
    print("\n".join(lines))
    if not args.no_write:
        write_section(SECTION, lines)


if __name__ == "__main__":
    main()
