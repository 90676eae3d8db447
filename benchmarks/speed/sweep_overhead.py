"""Sweep overhead: wall time against the ideal schedule, and the cost of watching a trial.

Runs the seed grid (128,256,384 x 6,12,18) with stand-in trials whose length is known (the
planner's cost model times --unit seconds) on three local:cpu slots, at a few poll intervals.
The ideal schedule is the plan's own makespan with those exact lengths (and, below it, the
longest-processing-time lower bound). The poll cost is the controller's time spent in
``Scheduler.poll`` per running trial per minute, measured, and extrapolated to the default 5 s
poll; with an sshd on this machine (``/usr/sbin/sshd``) an ssh poll is measured too, and with
Slurm installed a Slurm poll on a private single-node cluster (tests/slurm_cluster.py): one
``squeue`` for all of a sweep's jobs, so its cost per trial falls with the number of jobs.

    python benchmarks/speed/sweep_overhead.py [--unit 0.25] [--polls 0.1,0.5] [--no-write]

Writes benchmarks/sweep_overhead.json (every figure of the run) and its section of
benchmarks/RESULTS.md from that JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from _sweep_helpers import SSHD, fake_command, start_sshd  # noqa: E402
from slurm_cluster import SlurmCluster, missing_binaries  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

from imf.scheduler import JobRequest, scheduler_for  # noqa: E402
from imf.sweep import Engine, SweepRequest, plan_sweep  # noqa: E402

SECTION = "## Sweep (benchmarks/speed/sweep_overhead.py)"
OUT = ROOT / "benchmarks" / "sweep_overhead.json"
EPOCHS = 4


class TimedEngine(Engine):
    """The engine, with its polls timed and the report left out of the wall time."""

    poll_s = 0.0
    polls = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        opened = self.ctx.scheduler  # every part of the engine asks the shared context

        def scheduler(queue):
            return self._timed(opened(queue))
        self.ctx.scheduler = scheduler

    @staticmethod
    def _timed(sch):
        if not getattr(sch, "_timed", False):
            inner = sch.poll

            def timed(handle, offset=0, _inner=inner):
                t0 = time.perf_counter()
                try:
                    return _inner(handle, offset)
                finally:
                    TimedEngine.poll_s += time.perf_counter() - t0
                    TimedEngine.polls += 1
            sch.poll, sch._timed = timed, True
        return sch

    def _complete(self):
        self.loop_end = time.perf_counter()
        super()._complete()


def run_once(folder: Path, unit: float, poll: float) -> dict:
    os.environ["IMF_TRIAL_COMMAND"] = fake_command("--cost-scaled", "--epoch-s", str(unit))
    req = SweepRequest(config="pusht_image_imf", grids=["128,256,384x6,12,18"], mask="full",
                       queues=["local:cpu"] * 3, name=f"p{poll:g}", out=folder, epochs=EPOCHS,
                       poll=poll, stall_timeout=600)
    sdir, state, plan = plan_sweep(req)
    sdir.save(state)
    seconds = unit  # a cost unit is one epoch x factor; a stand-in epoch lasts unit x factor s
    ideal = max(plan.finish().values()) * seconds
    bound = plan.lower_bound() * seconds
    TimedEngine.poll_s, TimedEngine.polls = 0.0, 0
    engine = TimedEngine(sdir, state, lambda s: None)
    t0 = time.perf_counter()
    engine.run()
    wall = engine.loop_end - t0
    busy = sum(t.cost for t in state.trials) * seconds  # trial-seconds of running jobs
    per_poll = TimedEngine.poll_s / max(1, TimedEngine.polls)
    return {"poll": poll, "wall": wall, "ideal": ideal, "bound": bound, "gap": wall - ideal,
            "per_trial": (wall - ideal) / len(state.trials), "per_poll_ms": per_poll * 1e3,
            "measured": TimedEngine.poll_s / busy * 60, "at_5s": per_poll * 60 / 5}


def ssh_poll(folder: Path, n: int = 20) -> dict | None:
    """Milliseconds of one ssh poll through the shared connection, and the controller's seconds
    per trial-minute at a 5 s poll (12 polls a minute)."""
    if not os.path.exists(SSHD):
        return None
    server = start_sshd(folder / "sshd")
    try:
        sch = scheduler_for(server.spec("cpu"), server.host_options(folder / "remote"))
        handle = sch.start(JobRequest("j", "b", folder / "home", ["sleep", "30"], "smoke"))
        sch.poll(handle)  # opens the shared connection
        t0 = time.perf_counter()
        for _ in range(n):
            sch.poll(handle)
        per = (time.perf_counter() - t0) / n
        sch.stop(handle)
        return {"poll_ms": per * 1e3, "per_trial_minute_at_5s": per * 12}
    finally:
        server.stop()


def slurm_poll(folder: Path, jobs: int = 4, n: int = 20) -> dict | None:
    """Milliseconds of one batched Slurm poll of ``jobs`` jobs (2 run, the rest wait), per poll
    and per trial, and the controller's seconds per trial-minute at a 5 s poll."""
    if missing_binaries():
        return None
    cluster = SlurmCluster(folder / "slurm").start()
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        sch = scheduler_for("slurm://debug", {})
        handles = [sch.start(JobRequest(f"j{i}", "b", folder / f"job{i}", ["sleep", "120"], "smoke",
                                 token=f"t{i}")) for i in range(jobs)]
        batch = [(h, 0) for h in handles]
        sch.poll_many(batch)
        t0 = time.perf_counter()
        for _ in range(n):
            sch.poll_many(batch)
        per = (time.perf_counter() - t0) / n
        for handle in handles:
            sch.stop(handle)
        return {"jobs": jobs, "poll_ms": per * 1e3, "per_trial_ms": per * 1e3 / jobs,
                "per_trial_minute_at_5s": per / jobs * 12}
    finally:
        cluster.stop()


PLAN_SIZES = (100, 1000, 10000)
_PLAN = """
import sys, time
t0 = time.perf_counter()
from imf.sweep import SweepRequest, plan_sweep
n = int(sys.argv[1]); out = sys.argv[2]
lrs = ",".join(f"{i}e-4" for i in range(1, 11))
grids = ["32,64,96,128,160,192,224,256,288,320x1,2,3,4,5,6,7,8,9,10"] if n >= 100 else []
grids += [f"training.lr={lrs}"] if n >= 1000 else []
grids += ["training.seed=" + ",".join(str(s) for s in range(10))] if n >= 10000 else []
t1 = time.perf_counter()
sdir, state, plan = plan_sweep(SweepRequest(config="smoke", grids=grids, queues=["local:cpu"] * 4,
                                            name="plan", out=out))
t2 = time.perf_counter()
sdir.save(state)
t3 = time.perf_counter()
assert len(state.trials) == n, len(state.trials)
print(t1 - t0, t2 - t1, t3 - t2, t3 - t0)
"""


def plan_seconds(folder: Path, n: int) -> dict:
    """One fresh interpreter: import, plan ``n`` trials of the smoke preset on 4 slots, write
    sweep.json (what `imf sweep` does before its first trial starts)."""
    out = subprocess.run([sys.executable, "-c", _PLAN, str(n), str(folder / f"plan{n}")],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"sweep_overhead.py: planning {n} trials failed: "
                 f"{(out.stderr.strip().splitlines() or ['no message'])[-1]}")
    imp, plan, save, total = map(float, out.stdout.split())
    return {"n": n, "import": imp, "plan": plan, "save": save, "total": total,
            "ms_per_trial": 1e3 * (plan + save) / n}


def render(result: dict) -> str:
    """The RESULTS.md section, from what the run wrote to sweep_overhead.json."""
    rows, ssh, slurm, plans = result["runs"], result["ssh"], result["slurm"], result["plans"]
    load = result["load_average"]
    lines = [SECTION, "",
             f"Seed grid (9 stand-in trials, {result['epochs']} epochs of {result['unit']:g} s x cost factor) "
             f"on 3 local:cpu slots; `python benchmarks/speed/sweep_overhead.py` (benchmarks/sweep_overhead.json); "
             f"{result['date']}, {result['cores']} cores, shared: load average {load['start']:.1f} at the start, "
             f"{load['end']:.1f} at the end, so other work shared the cores and every time here is an upper "
             "bound on an idle machine's. All figures below are from this one run.", "",
             "| poll s | sweep wall s | ideal (plan) s | LPT bound s | gap s | gap per trial s | "
             "poll ms | poll s per trial-minute (measured) | at 5 s poll |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['poll']:g} | {r['wall']:.2f} | {r['ideal']:.2f} | {r['bound']:.2f} | "
                     f"{r['gap']:.2f} | {r['per_trial']:.3f} | {r['per_poll_ms']:.1f} | "
                     f"{r['measured']:.3f} | {r['at_5s']:.4f} |")
    if ssh is not None:
        lines += ["", f"ssh poll through the shared connection (sshd on 127.0.0.1): {ssh['poll_ms']:.1f} ms, "
                      f"i.e. {ssh['per_trial_minute_at_5s']:.3f} s of controller time per trial-minute at a 5 s poll."]
    if slurm is not None:
        lines += ["", f"Slurm poll (one `squeue` for all {slurm['jobs']} jobs of the sweep, plus their run "
                      f"folders; private single-node cluster): {slurm['poll_ms']:.1f} ms per poll, "
                      f"{slurm['per_trial_ms']:.1f} ms per trial, i.e. {slurm['per_trial_minute_at_5s']:.3f} s "
                      "of controller time per trial-minute at a 5 s poll."]
    if plans:
        lines += ["", "Planning (`plan_sweep` of the smoke preset: a 10 x 10 size grid, x 10 learning "
                      "rates, x 10 seeds, on 4 local:cpu slots, then sweep.json written; one fresh "
                      "interpreter per size):", "",
                  "| trials | import s | plan s | write sweep.json s | total s | ms per trial |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {p['n']} | {p['import']:.2f} | {p['plan']:.2f} | {p['save']:.2f} | "
                  f"{p['total']:.2f} | {p['ms_per_trial']:.2f} |" for p in plans]
    lines += ["", "The gap is launch latency (half a poll on average per trial, plus process start) "
                  "and is paid once per trial; a local slot's poll is the job wrapper's probe run in the "
                  "controller's own process, an ssh queue's one ssh round trip per running trial per poll, "
                  "and Slurm's one `squeue` per poll for all of them.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", type=float, default=0.25, help="seconds per epoch per cost unit")
    parser.add_argument("--polls", default="0.1,0.5", help="poll intervals to measure")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--plan-only", action="store_true", help="only the planning rows (printed)")
    parser.add_argument("--render", action="store_true",
                        help="write the RESULTS.md section from the committed JSON, measuring nothing")
    args = parser.parse_args()
    if args.render:
        write_section(SECTION, render(json.loads(OUT.read_text())))
        return
    result = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "unit": args.unit,
              "epochs": EPOCHS, "load_average": {"start": os.getloadavg()[0]}}
    with tempfile.TemporaryDirectory() as tmp:
        result["plans"] = [plan_seconds(Path(tmp), n) for n in PLAN_SIZES]
        if args.plan_only:
            result.update(runs=[], ssh=None, slurm=None)
            result["load_average"]["end"] = os.getloadavg()[0]
            print(render(result))
            return
        result["runs"] = [run_once(Path(tmp), args.unit, float(p)) for p in args.polls.split(",")]
        result["ssh"] = ssh_poll(Path(tmp))
        result["slurm"] = slurm_poll(Path(tmp))
    result["load_average"]["end"] = os.getloadavg()[0]
    text = render(result)
    print(text)
    if not args.no_write:
        OUT.write_text(json.dumps(result, indent=1) + "\n")
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
