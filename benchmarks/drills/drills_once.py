"""Exactly once, under any timing (issue #49): the controller SIGKILLed at every step of a trial's
start and end (imf/drill.py's kill points), the window after the kill held open on purpose, then
resumed; hundreds of rounds with stand-in trials that take milliseconds (tests/fake_trial.py).

A sweep round: `imf sweep` of 4 stand-in trials on two local:cpu slots with IMF_DRILL_KILL=POINT:N
(the controller SIGKILLs itself the N-th time it reaches POINT). At the kill the drill SIGSTOPs
every job wrapper of the sweep, so a job that has not yet checked its claim or written its pid
file, or has not yet written its exit code, stays so while the resumed controller looks; it
wakes them at a random moment after the resume started. In a third of the rounds the resume is
killed too (at a random point); resumes go on until the sweep finishes. Then every trial must
have started once (the trial command's start ledger) and completed once (the fake trial's
ledger), in one attempt with one history entry, state completed, one scoreboard record and one
iteration-log line, no attempts/ folder, and no process of the drill left.

A loop round: the same for `imf loop` (2 rounds of 2 proposals on synthetic runs), killed at
its own writes (loop.json, the hypothesis block, the conclusion) or at a sweep's; every round's
trials once, one hypothesis block per round, each concluded, the loop finished.

    python benchmarks/drills/drills_once.py --rounds 20 --loop-rounds 4   # at each kill point
    python benchmarks/drills/drills.py --only exactly-once                 # the same, one line

tests/test_drills_once.py runs a few rounds in CI.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

GRID = "32,64x1,2"  # four trials on two slots: starts and ends overlap
KILL_AT_MOST = 4  # the controller dies the 1st..4th time it reaches the point
WAKE_AFTER_S = 1.0  # the stopped wrappers wake up to this long after the resume starts
MAX_RESUMES = 6
JSON = ROOT / "benchmarks" / "drills_once.json"
Queues = Callable[[Path], tuple[list[str], dict[str, str]]]  # a round's folder -> its queue words, env


@dataclass
class Tally:
    rounds: int = 0
    kills: int = 0  # controllers that died at their point (a point may not be reached)
    stopped: int = 0  # job wrappers held stopped across a resume
    trials: int = 0
    good: int = 0  # trials that ran exactly once with consistent records
    problems: list[str] = field(default_factory=list)
    failed: int = 0  # rounds with a problem
    by_queue: dict[str, Counter] = field(default_factory=dict)  # "local", "loop", "ssh", "slurm" -> counts

    def add(self, verdict: "Verdict", label: str, where: str = "local") -> None:
        counts = self.by_queue.setdefault(where, Counter())
        counts.update(rounds=1, trials=verdict.trials, good=verdict.trials - len(verdict.bad),
                      failed=int(bool(verdict.problems)))
        self.rounds += 1
        self.trials += verdict.trials
        self.good += verdict.trials - len(verdict.bad)
        self.failed += bool(verdict.problems)
        self.problems += [f"{label}: {p}" for p in verdict.problems]


@dataclass
class Verdict:
    trials: int
    bad: set[str] = field(default_factory=set)  # trials with a problem
    problems: list[str] = field(default_factory=list)

    def trial(self, tid: str, problem: str) -> None:
        self.bad.add(tid)
        self.problems.append(f"{tid}: {problem}")


# ------------------------------------------------------------------ the trial command
def trial_main(argv: list[str]) -> int:
    """``drills_once.py trial START_LEDGER [--real-config] FAKE_ARGS...``: note the start, run
    the stand-in trial; ``--real-config``: then write a real config.yaml (a loop plans on it)."""
    ledger, rest = argv[0], argv[1:]
    real = "--real-config" in rest
    rest = [a for a in rest if a != "--real-config"]
    trial_id = rest[rest.index("--id") + 1]
    with open(ledger, "a") as f:
        f.write(f"{trial_id} {os.getpid()}\n")
    import fake_trial
    code = fake_trial.main(rest)
    if real and code == 0:
        from imf.config import load_config
        opts, args = fake_trial.parse(rest)
        load_config(args.config, args.overrides).save(Path(args.out) / "config.yaml")
    return code


def _env(root: Path, real_config: bool = False) -> dict[str, str]:
    command = " ".join(["{python}", str(Path(__file__).resolve()), "trial", str(root / "started"),
                        *(["--real-config"] if real_config else []), "--epoch-s", "0.01",
                        "--ledger", str(root / "completed")])
    env = {k: v for k, v in os.environ.items() if k != "IMF_DRILL_KILL"}
    return {**env, "IMF_TRIAL_COMMAND": command, "OMP_NUM_THREADS": "1"}


# ------------------------------------------------------------------ processes
def _imf(args: list[str], env: dict[str, str], kill: str | None = None) -> subprocess.Popen:
    env = {**env, "IMF_DRILL_KILL": kill} if kill else env
    return subprocess.Popen([sys.executable, "-m", "imf", *args], env=env, cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _processes(root: Path, *words: str) -> list[int]:
    """Live processes whose command line names ``root`` and each of ``words``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (cmdline.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(root) in text and all(w in text for w in words) and state != "Z":
            found.append(int(cmdline.parent.name))
    return found


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def drive(root: Path, first: list[str], resume: list[str], env: dict[str, str],
          kills: list[str | None], tally: Tally, rng: random.Random) -> str:
    """Run ``first`` (killed at kills[0]), then ``resume`` (killed at kills[1], ...) until one
    exits 0; after each death the job wrappers stay stopped until a while into the resume.
    Returns the last stderr ("" once finished)."""
    proc = _imf(first, env, kills[0] if kills else None)
    for i in range(1, MAX_RESUMES + 1):
        _, err = proc.communicate(timeout=600)
        if proc.returncode == 0:
            return ""
        if proc.returncode != -signal.SIGKILL:
            return f"exit {proc.returncode}: {err.strip()[-300:]}"
        tally.kills += 1
        held = _processes(root, "imf.scheduler.wrapper", " run ") + _processes(root, "submitit")  # Slurm's
        _signal(held, signal.SIGSTOP)
        tally.stopped += len(held)
        proc = _imf(resume, env, kills[i] if i < len(kills) else None)
        time.sleep(rng.uniform(0, WAKE_AFTER_S))
        _signal(held, signal.SIGCONT)
    proc.communicate(timeout=600)
    return "" if proc.returncode == 0 else f"still not finished after {MAX_RESUMES} resumes"


# ------------------------------------------------------------------ checks
def _ledger(path: Path) -> Counter[str]:
    return Counter(line.split()[0] for line in path.read_text().splitlines()) if path.exists() else Counter()


def _project(sweep_dir: Path) -> Path:
    """Where the sweep's trials are recorded: the sweep folder, or the project above it (a loop's)."""
    return sweep_dir.parent if (sweep_dir.parent / "scoreboard.json").exists() else sweep_dir


def check_sweep(sweep_dir: Path, root: Path, verdict: Verdict) -> None:
    """What is wrong with the finished sweep in ``sweep_dir``, trial by trial."""
    from imf.store import IterationLogStore
    state = json.loads((sweep_dir / "sweep.json").read_text())
    started, completed = _ledger(root / "started"), _ledger(root / "completed")
    project = _project(sweep_dir)
    board = Counter(t["id"] for t in json.loads((project / "scoreboard.json").read_text())["trials"])
    lines = Counter(t["id"] for t in IterationLogStore(project).read())
    if state["status"] != "finished":
        verdict.problems.append(f"{sweep_dir.name}: status {state['status']}")
    for t in state["trials"]:
        tid, history = t["id"], [h["outcome"] for h in t["history"]]
        if started[tid] != 1 or completed[tid] != 1:
            verdict.trial(tid, f"started {started[tid]}, completed {completed[tid]} times")
        if t["state"] != "completed" or t["attempts"] != 1 or history != ["completed"] or not t["recorded"]:
            verdict.trial(tid, f"{t['state']}, attempts {t['attempts']}, history {history}, "
                               f"recorded {t['recorded']}")
        if board[tid] != 1 or lines[tid] != 1 or (sweep_dir / tid / "attempts").exists():
            verdict.trial(tid, f"{board[tid]} scoreboard records, {lines[tid]} iteration-log lines, "
                               f"attempts/ folder {(sweep_dir / tid / 'attempts').exists()}")


def leftovers(root: Path, verdict: Verdict) -> Verdict:
    """Processes of the drill still alive once their sweep finished (given 30 s to end)."""
    end = time.monotonic() + 30
    while _processes(root) and time.monotonic() < end:
        time.sleep(0.2)
    live = _processes(root)
    _signal(live, signal.SIGKILL)
    if live:
        verdict.problems.append(f"{len(live)} process(es) left")
    return verdict


# ------------------------------------------------------------------ rounds
def sweep_round(root: Path, kills: list[str | None], tally: Tally, rng: random.Random,
                queues: Queues | None = None) -> Verdict:
    """4 stand-in trials on two slots (two local:cpu, or ``queues``' for this round), killed at
    ``kills``, resumed until finished, then checked."""
    words, extra_env = queues(root) if queues else (["--queue", "local:cpu", "--queue", "local:cpu"], {})
    env = {**_env(root), **extra_env}
    first = ["sweep", "smoke", "--grid", GRID, "--epochs", "2", "--name", "d", "--out", str(root),
             "--poll", "0.05", "--stall-timeout", "120", *words]
    error = drive(root, first, ["sweep", "--resume", str(root / "d"), "--poll", "0.05"], env, kills, tally, rng)
    verdict = Verdict(4)
    if error:
        verdict.problems.append(f"the sweep did not finish: {error}")
        verdict.bad.update(f"trial {i}" for i in range(4))
    else:
        check_sweep(root / "d", root, verdict)
    return leftovers(root, verdict)


def ssh_queues(server) -> Queues:
    """Two SSH queues of one host (a real sshd on 127.0.0.1): the jobs run under sshd's sessions,
    detached, and outlive the controller as on a remote machine."""
    def words(root: Path) -> tuple[list[str], dict[str, str]]:
        hosts = server.hosts_file(root / "hosts.yaml", root / "remote", gpus=None)
        return ["--hosts", str(hosts), "--queue", server.spec("cpu"), "--queue", server.spec("cpu")], {}
    return words


def slurm_queues(cluster) -> Queues:
    """One Slurm queue of two slots on a private single-node cluster (tests/slurm_cluster.py):
    the jobs are Slurm's, and outlive the controller."""
    def words(root: Path) -> tuple[list[str], dict[str, str]]:
        return ["--queue", "slurm://debug?slots=2"], cluster.env()
    return words


def _base_runs(folder: Path) -> None:
    from _suggest_runs import make_run
    make_run(folder, n_emb=64, n_layer=2, scores=[0.6] * 6, se=0.01)
    make_run(folder, n_emb=32, n_layer=2, scores=[0.4] * 6, se=0.01)


def check_loop(folder: Path, root: Path, verdict: Verdict) -> None:
    from imf.store import IterationLogStore
    loop = json.loads((folder / "loop.json").read_text())
    rounds = loop["rounds"]
    verdict.trials = sum(len(r["proposals"]) for r in rounds)
    if loop["status"] != "finished" or not rounds or any(r["status"] != "concluded" for r in rounds):
        verdict.problems.append(f"loop {loop['status']}, rounds {[r['status'] for r in rounds]}")
    blocks = IterationLogStore(folder).hypotheses()
    if len(blocks) != len(rounds) or any(not b.get("result") or not b.get("conclusion") for b in blocks):
        verdict.problems.append(f"{len(blocks)} hypothesis blocks for {len(rounds)} rounds, "
                                f"{sum(bool(b.get('conclusion')) for b in blocks)} concluded")
    for r in rounds:
        check_sweep(folder / r["sweep"], root, verdict)


def loop_round(root: Path, kills: list[str | None], tally: Tally, rng: random.Random) -> Verdict:
    folder = root / "exp"
    _base_runs(folder)
    env = _env(root, real_config=True)
    first = ["loop", str(folder), "--rounds", "2", "--per-round", "2", "--queue", "local:cpu",
             "--queue", "local:cpu"]
    error = drive(root, first, ["loop", "--resume", str(folder)], env, kills, tally, rng)
    verdict = Verdict(4)
    if error:
        verdict.problems.append(f"the loop did not finish: {error}")
        verdict.bad.update(f"trial {i}" for i in range(4))
    else:
        check_loop(folder, root, verdict)
    return leftovers(root, verdict)


def kills_for(point: str, rng: random.Random, points: tuple[str, ...]) -> list[str | None]:
    """The kill of the first controller (a resume's point: of the first resume, after a kill at a
    start), and in a third of the rounds one of the resume at a random point."""
    from imf.drill import RESUME
    nth = f"{point}:{rng.randint(1, KILL_AT_MOST)}"
    kills: list[str | None] = ["wrapper-spawned:1", nth] if point in RESUME else [nth]
    if rng.random() < 1 / 3:
        kills.append(f"{rng.choice(points)}:{rng.randint(1, KILL_AT_MOST)}")
    return kills


def run(rounds: int, loop_rounds: int = 0, seed: int = 0, points: tuple[str, ...] | None = None,
        ssh_rounds: int = 0, slurm_rounds: int = 0) -> Tally:
    """At each kill point: ``rounds`` sweep rounds on local slots, ``loop_rounds`` loop rounds,
    ``ssh_rounds`` on SSH queues (a private sshd) and ``slurm_rounds`` on a private Slurm cluster."""
    from imf.drill import LOOP, POINTS
    rng, tally, points = random.Random(seed), Tally(), points or POINTS
    with tempfile.TemporaryDirectory(prefix="imf-once-services-") as services, ExitStack() as stack:
        plan: list[tuple[Callable, str, tuple]] = [(sweep_round, p, ()) for p in points for _ in range(rounds)]
        plan += [(loop_round, p, ()) for p in (*LOOP, "launch-saved", "wrapper-spawned", "ended-saved", "recorded")
                 for _ in range(loop_rounds)]
        if ssh_rounds:
            queues = ssh_queues(_service(stack, "sshd", Path(services)))
            plan += [(sweep_round, p, (queues,)) for p in points for _ in range(ssh_rounds)]
        if slurm_rounds:
            queues = slurm_queues(_service(stack, "slurm", Path(services)))
            plan += [(sweep_round, p, (queues,)) for p in points for _ in range(slurm_rounds)]
        for kind, point, extra in plan:
            kills = kills_for(point, rng, POINTS)
            where = extra[0].__qualname__.split("_")[0] if extra else kind.__name__.split("_")[0]
            where = "local" if where == "sweep" else where  # sweep_round on local slots
            with tempfile.TemporaryDirectory(prefix="imf-once-") as tmp:
                tally.add(kind(Path(tmp), kills, tally, rng, *extra), f"{where} {' then '.join(map(str, kills))}",
                          where)
    return tally


def _service(stack: ExitStack, what: str, folder: Path):
    """A private sshd or Slurm cluster (the tests' own), stopped when ``stack`` closes."""
    if what == "sshd":
        from _sweep_helpers import start_sshd
        server = start_sshd(folder / "sshd")
        stack.callback(server.stop)
        return server
    from slurm_cluster import SlurmCluster
    cluster = SlurmCluster(folder / "slurm")
    stack.callback(cluster.stop)
    return cluster.start()


def line(tally: Tally, seconds: float) -> str:
    return (f"exactly-once ({tally.rounds} rounds, {tally.kills} controller SIGKILLs at the steps of "
            f"a trial's start and end, {tally.stopped} job wrappers held stopped across a resume): "
            f"trials run exactly once with consistent records {tally.good}/{tally.trials}, "
            f"rounds with a problem {tally.failed} ({seconds:.0f} s)")


def drill_exactly_once(root: Path, rounds: int = 20, loop_rounds: int = 4) -> str:
    """benchmarks/drills/drills.py's line (the rounds use folders of their own)."""
    started = time.monotonic()
    tally = run(rounds, loop_rounds)
    return "\n".join([line(tally, time.monotonic() - started), *("  " + p for p in tally.problems[:10])])


ONCE_DRILLS = {"exactly-once": drill_exactly_once}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="sweep rounds at each kill point")
    parser.add_argument("--loop-rounds", type=int, default=4, help="loop rounds at each loop kill point")
    parser.add_argument("--ssh-rounds", type=int, default=0,
                        help="sweep rounds on two SSH queues (a private sshd on 127.0.0.1) at each kill point")
    parser.add_argument("--slurm-rounds", type=int, default=0,
                        help="sweep rounds on a private single-node Slurm cluster at each kill point")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help=f"print only; leave {JSON.name}")
    args = parser.parse_args()
    started = time.monotonic()
    tally = run(args.rounds, args.loop_rounds, args.seed, ssh_rounds=args.ssh_rounds,
                slurm_rounds=args.slurm_rounds)
    seconds = time.monotonic() - started
    print(line(tally, seconds))
    if not args.no_write:
        from imf.atomic import atomic_write_json
        atomic_write_json(JSON, {"command": " ".join(["python", "benchmarks/drills/drills_once.py", *sys.argv[1:]]),
                                 "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                 "rounds": tally.rounds, "kills": tally.kills, "stopped": tally.stopped,
                                 "trials": tally.trials, "good": tally.good, "failed": tally.failed,
                                 "seconds": round(seconds), "by_queue": tally.by_queue,
                                 "problems": tally.problems[:20]})
        print(f"wrote {JSON.relative_to(ROOT)}")
    for problem in tally.problems[:20]:
        print("  " + problem)
    sys.exit(1 if tally.failed else 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["trial"]:
        sys.exit(trial_main(sys.argv[2:]))
    main()
