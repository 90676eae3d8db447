"""Scripted demo sets: the expert simulating one, against copying the first episodes of a larger
cached set of the same seed (the same data: tests/test_demo_cache.py).

    nice python benchmarks/speed/demo_speed.py [--episodes 2000] [--derived 1000] [--note TEXT]

Each step is a fresh process, timed from here (wall clock; its own CPU seconds and peak memory
from os.wait4): `imf data demo --episodes N` writing the cache's N-set, then with that set
cached, what a trial with data.demo_episodes=M does (ensure_demo_dataset) and `imf data demo
--episodes M`. The cache is a private temporary folder, removed at the end, never
~/.cache/imf. One run of each: the simulation takes minutes. Writes its section of
benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from imf.pusht import default_cache_dir, demo_dataset_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402  (benchmarks/common/results_file.py)

SECTION = "## Scripted demo sets (benchmarks/speed/demo_speed.py)"


def timed(args: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS in GB of one process."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        proc = subprocess.Popen(args, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status):
            errors.seek(0)
            raise SystemExit(f"{' '.join(args)} failed: {errors.read().decode()[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1e6}


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def measure(cache: Path, episodes: int, derived: int) -> list[tuple[str, dict[str, float]]]:
    """The three steps, in order: each later one finds the first one's set in the cache."""
    env = {"IMF_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    imf = [sys.executable, "-m", "imf", "data", "demo"]
    big, small = demo_dataset_path(episodes, 0, cache), demo_dataset_path(derived, 0, cache)
    ensure = (f"from imf.pusht import ensure_demo_dataset; "
              f"ensure_demo_dataset({derived}, cache_dir={str(cache)!r})")
    fresh = timed(imf + ["--episodes", str(episodes), "--out", str(big)], env)
    print(f"simulated {episodes}: {fresh}", flush=True)
    copied = timed([sys.executable, "-c", ensure], env)
    print(f"copied {derived} (ensure_demo_dataset): {copied}", flush=True)
    cli = timed(imf + ["--episodes", str(derived), "--out", str(cache / "out.zarr")], env)
    print(f"copied {derived} (imf data demo): {cli}", flush=True)
    return [(f"`imf data demo --episodes {episodes}`, nothing cached: the expert simulates and records "
             f"them ({size_mb(big):.0f} MB on disk)", fresh),
            (f"a trial's set of {derived} (`ensure_demo_dataset({derived})`) with the {episodes}-set cached: "
             f"its first {derived} episodes copied ({size_mb(small):.0f} MB)", copied),
            (f"`imf data demo --episodes {derived}` with the {episodes}-set cached: copied", cli)]


def section(rows: list[tuple[str, dict[str, float]]], sizes: tuple[int, int], loads: tuple[float, float],
            note: str) -> list[str]:
    (fresh, copied), (episodes, derived) = (rows[0][1], rows[1][1]), sizes
    per_fresh, per_copied = fresh["cpu"] / episodes, copied["cpu"] / derived
    lines = [SECTION, "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"{os.cpu_count()} CPUs visible, load average {loads[0]:.1f} at the start and {loads[1]:.1f} "
             f"at the end, Python {platform.python_version()}. {note}".rstrip(), "",
             "| step (a fresh process each, one run) | wall s | CPU s | peak RSS GB |", "|---|---|---|---|"]
    lines += [f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['rss']:.2f} |" for name, r in rows]
    lines += ["", f"Per episode: the expert {1e3 * per_fresh:.0f} CPU ms, the copy {1e3 * per_copied:.0f} "
              f"({per_fresh / per_copied:.1f}x less), so the {derived}-set costs {copied['cpu']:.0f} CPU s "
              f"copied against about {per_fresh * derived:.0f} simulated. The expert keeps each episode's images in a "
              "temporary file, memory-mapped, until the writer reads them (peak RSS counts the mapped "
              "pages it touched); the copy reads and writes 2048 frames at a time. How it was taken: benchmarks/speed/demo_speed.py "
              "started each step as its own process with IMF_CACHE set to a private temporary folder "
              "(removed afterwards; ~/.cache/imf untouched), timed the wall clock from the script, and read "
              "the process's user + system CPU seconds and peak resident memory from os.wait4. The wall "
              "times depend on what else holds the cores; the CPU seconds much less."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=2000, help="the set the expert simulates")
    parser.add_argument("--derived", type=int, default=1000, help="the smaller set copied from it")
    parser.add_argument("--note", default="", help="a sentence on what else ran on the machine")
    args = parser.parse_args()
    if not 1 <= args.derived < args.episodes:
        parser.error(f"--derived {args.derived}: give 1 to {args.episodes - 1} (fewer than --episodes)")
    cache = Path(tempfile.mkdtemp(prefix="imf-demo-speed-"))
    if cache.resolve() == default_cache_dir().resolve():
        raise SystemExit("the temporary cache is the default cache; refusing to write there")
    start = os.getloadavg()[0]
    try:
        rows = measure(cache, args.episodes, args.derived)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    loads = (start, os.getloadavg()[0])
    write_section(SECTION, section(rows, (args.episodes, args.derived), loads, args.note))


if __name__ == "__main__":
    main()
