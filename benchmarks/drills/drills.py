"""Fault drills: the sweep and the stores under the faults a hostile day brings, end to end.

Each drill runs real `imf sweep` controllers (subprocesses) with the stand-in trial
(tests/fake_trial.py, which appends "ID PID" to a ledger when a trial completes), injects its
fault, lets the sweep finish (resuming where the drill says), and prints one line:

    trials completed exactly once (n/n), records lost, duplicates, leftover processes,
    leftover temp files

- sigkill-trial: SIGKILL a running trial; the sweep retries it.
- sigstop-trial: SIGSTOP a running trial; the stall timeout kills it, the sweep retries it.
- controller-kills: SIGKILL the controller 5 times in one sweep, `--resume` after each.
- ssh-down: a loopback sshd and its sessions killed mid-trial; the controller SIGKILLed after
  "is down"; sshd back; `--resume` (needs /usr/sbin/sshd).
- writers: 8 processes x 50 scoreboard records with random SIGKILLs (killed writers restart).
- one-folder, disk-full-sweep, sigterm-resume: real `imf trial` processes (benchmarks/drills/drills_trial.py).
- loop-kills: `imf loop` of real tiny trials SIGKILLed 5 times, resumed after each
  (benchmarks/drills/drills_loop.py).
- exactly-once: the controller (of sweeps and of loops) SIGKILLed at every step of a trial's
  start and end, its job wrappers held stopped across the resume, hundreds of rounds
  (benchmarks/drills/drills_once.py).

    python benchmarks/drills/drills.py [--only NAME ...] [--no-write]

Writes its section of benchmarks/RESULTS.md. Takes a few minutes.
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from _sweep_helpers import SSHD, fake_command, start_sshd, wait_for  # noqa: E402
from drills_loop import LOOP_DRILLS  # noqa: E402
from drills_once import ONCE_DRILLS  # noqa: E402
from drills_trial import TRIAL_DRILLS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

SECTION = "## Fault drills (benchmarks/drills/drills.py)"


@dataclass
class Figures:
    name: str
    done: int
    total: int
    lost: int
    duplicates: int
    processes: int = 0
    temps: int = 0
    seconds: float = 0.0
    unit: str = "trials completed exactly once"

    def line(self) -> str:
        return (f"{self.name}: {self.unit} {self.done}/{self.total}, records lost {self.lost}, "
                f"duplicates {self.duplicates}, leftover processes {self.processes}, "
                f"leftover temp files {self.temps} ({self.seconds:.0f} s)")


# ------------------------------------------------------------------ plumbing
def imf(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "imf", *args], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def trial_env(root: Path, *fake: str) -> dict[str, str]:
    command = fake_command(*fake, "--ledger", str(root / "ledger.txt"))
    return {**os.environ, "IMF_TRIAL_COMMAND": command, "OMP_NUM_THREADS": "1"}


def sweep(root: Path, env: dict[str, str], grid: str, queues: list[str], epochs: int,
          *extra: str) -> subprocess.Popen:
    args = ["sweep", "smoke", "--grid", grid, "--name", "d", "--out", str(root),
            "--epochs", str(epochs), "--poll", "0.2", *extra]
    for queue in queues:
        args += ["--queue", queue]
    return imf(*args, env=env)


def finish(proc: subprocess.Popen, timeout: float = 600) -> None:
    _, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"controller exited {proc.returncode}: {err.strip()[-400:]}")


def state(sweep_dir: Path) -> dict:
    try:
        return json.loads((sweep_dir / "sweep.json").read_text())
    except (OSError, ValueError):
        return {}


def running_trial(sweep_dir: Path, queue_prefix: str = "local") -> dict | None:
    """A trial running on a matching queue that has logged at least one epoch."""
    for t in state(sweep_dir).get("trials", []):
        log = sweep_dir / t["id"] / "logs.json.txt"
        if t["state"] == "running" and t["queue"].startswith(queue_prefix) and log.is_file() \
                and log.stat().st_size:
            return t
    return None


def leftover_processes(root: Path, keep: set[int] = frozenset(), wait_s: float = 15.0) -> int:
    """Live processes whose command line names the drill's folder (killed ones get a moment)."""
    def live() -> list[int]:
        found = []
        for cmd in Path("/proc").glob("[0-9]*/cmdline"):
            pid = int(cmd.parent.name)
            try:
                text = cmd.read_bytes().replace(b"\0", b" ").decode(errors="replace")
                status = (cmd.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if str(root) in text and pid not in keep and pid != os.getpid() and status != "Z":
                found.append(pid)
        return found
    end = time.monotonic() + wait_s
    while live() and time.monotonic() < end:
        time.sleep(0.2)
    return len(live())


def temp_files(root: Path) -> int:
    return sum(1 for _ in root.rglob("*.tmp"))


def sweep_figures(name: str, root: Path, started: float, keep: set[int] = frozenset()) -> Figures:
    """The figures once the sweep said it finished: processes still running then (given 3 s to
    go), and, after those ended too, what every completed run left in the ledger and stores."""
    processes = leftover_processes(root, keep, wait_s=3)
    if processes:
        leftover_processes(root, keep, wait_s=120)
    sweep_dir = root / "d"
    trials = state(sweep_dir)["trials"]
    ledger = Counter(line.split()[0] for line in (root / "ledger.txt").read_text().splitlines())
    board = Counter(t["id"] for t in json.loads((sweep_dir / "scoreboard.json").read_text())["trials"])
    once = sum(t["state"] == "completed" and ledger[t["id"]] == 1 for t in trials)
    lost = sum(board[t["id"]] == 0 for t in trials)
    dups = sum(max(0, n - 1) for n in ledger.values()) + sum(max(0, n - 1) for n in board.values())
    return Figures(name, once, len(trials), lost, dups, processes, temp_files(root),
                   time.monotonic() - started)


# ------------------------------------------------------------------ drills
def drill_sigkill_trial(root: Path) -> Figures:
    started = time.monotonic()
    ctl = sweep(root, trial_env(root, "--epoch-s", "0.2"), "64x1,2,3,4", ["local:cpu"] * 2, 8)
    victim = wait_for(lambda: running_trial(root / "d"), timeout=120)
    os.kill(int((root / "d" / victim["id"] / "fake.pid").read_text()), signal.SIGKILL)
    finish(ctl)
    return sweep_figures("sigkill-trial", root, started)


def drill_sigstop_trial(root: Path) -> Figures:
    started = time.monotonic()
    ctl = sweep(root, trial_env(root, "--epoch-s", "0.2"), "64x1,2,3", ["local:cpu"] * 2, 8,
                "--stall-timeout", "4")
    victim = wait_for(lambda: running_trial(root / "d"), timeout=120)
    os.kill(int((root / "d" / victim["id"] / "fake.pid").read_text()), signal.SIGSTOP)
    finish(ctl)
    return sweep_figures("sigstop-trial", root, started)


def drill_controller_kills(root: Path, kills: int = 5) -> Figures:
    started, env = time.monotonic(), trial_env(root, "--epoch-s", "0.25")
    ctl = sweep(root, env, "64,128x1,2,3", ["local:cpu"] * 2, 10)
    wait_for(lambda: (root / "d" / "sweep.json").is_file(), timeout=60)
    for _ in range(kills):
        time.sleep(random.uniform(0.4, 1.5))
        ctl.kill()
        ctl.wait()
        ctl = imf("sweep", "--resume", str(root / "d"), "--poll", "0.2", env=env)
    finish(ctl)
    return sweep_figures(f"controller-kills ({kills} SIGKILLs)", root, started)


def drill_ssh_down(root: Path) -> Figures:
    started = time.monotonic()
    server = start_sshd(root / "sshd")
    try:
        env = trial_env(root, "--epoch-s", "0.2")
        hosts = server.hosts_file(root / "hosts.yaml", root / "remote")
        ctl = sweep(root, env, "64x1,2", [server.spec("cpu"), "local:cpu"], 25,
                    "--hosts", str(hosts), "--stall-timeout", "60")
        wait_for(lambda: running_trial(root / "d", "ssh") or _remote_started(root), timeout=120)
        time.sleep(2)
        server.kill_sessions()  # while they are still the listener's children
        server.stop()
        # "is down" logged and (with this imf) the orphan saved: then the controller dies
        wait_for(lambda: "is down" in _log(root) and _orphan_saved(root), timeout=180)
        ctl.kill()
        ctl.wait()
        server.restart()
        finish(imf("sweep", "--resume", str(root / "d"), "--poll", "0.2", env=env))
    finally:
        server.stop()
    figures = sweep_figures("ssh-down", root, started, keep={server.proc.pid})
    return figures


def _remote_started(root: Path) -> bool:
    return any(p.stat().st_size for p in (root / "remote").glob("d/*/logs.json.txt"))


def _orphan_saved(root: Path) -> bool:
    trials = state(root / "d").get("trials", [])
    return any(t.get("orphans") for t in trials) or (trials and "orphans" not in trials[0])


def _log(root: Path) -> str:
    path = root / "d" / "sweep.log"
    return path.read_text() if path.is_file() else ""


WRITER = """import sys
from pathlib import Path
from imf.store import ScoreboardStore
store, k = ScoreboardStore(Path(sys.argv[1])), sys.argv[2]
for i in range(int(sys.argv[3])):
    store.record({"id": f"w{k}-r{i}", "score": i / 100, "status": "completed"})
"""


def drill_writers(root: Path, writers: int = 8, records: int = 50, kills: int = 30) -> Figures:
    started = time.monotonic()
    start = lambda k: subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(k),  # noqa: E731
                                        str(records)], cwd=ROOT)
    procs = {k: start(k) for k in range(writers)}
    done_kills = 0
    while any(p.poll() is None for p in procs.values()):
        time.sleep(random.uniform(0.05, 0.4))
        live = [k for k, p in procs.items() if p.poll() is None]
        if live and done_kills < kills:
            k = random.choice(live)
            procs[k].kill()
            procs[k].wait()
            procs[k] = start(k)  # a killed writer starts over (records are upserts)
            done_kills += 1
    failed = [k for k, p in procs.items() if p.returncode != 0]
    if failed:
        raise RuntimeError(f"writers {failed} failed")
    ids = Counter(t["id"] for t in json.loads((root / "scoreboard.json").read_text())["trials"])
    want = {f"w{k}-r{i}" for k in range(writers) for i in range(records)}
    return Figures(f"writers ({writers}x{records}, {done_kills} SIGKILLs)", len(want & set(ids)),
                   len(want), len(want - set(ids)), sum(n - 1 for n in ids.values()),
                   leftover_processes(root), temp_files(root), time.monotonic() - started,
                   unit="records kept")


DRILLS = {"sigkill-trial": drill_sigkill_trial, "sigstop-trial": drill_sigstop_trial,
          "controller-kills": drill_controller_kills, "ssh-down": drill_ssh_down,
          "writers": drill_writers, **TRIAL_DRILLS, **LOOP_DRILLS, **ONCE_DRILLS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(DRILLS), default=None)
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md")
    args = parser.parse_args()
    names = args.only or list(DRILLS)
    lines = []
    for name in names:
        if name == "ssh-down" and not os.path.exists(SSHD):
            lines.append(f"{name}: skipped (no sshd at {SSHD})")
        else:
            with tempfile.TemporaryDirectory(prefix=f"imf-drill-{name}-") as tmp:
                result = DRILLS[name](Path(tmp))
                lines.append(result if isinstance(result, str) else result.line())
        print(lines[-1], flush=True)
    if not args.no_write and args.only is None:
        when = time.strftime("%Y-%m-%d")
        write_section(SECTION, [SECTION, "", f"`python benchmarks/drills/drills.py`; {when}, "
                                f"{os.cpu_count()} cores. One line per drill:", "", "```",
                                *lines, "```"])


if __name__ == "__main__":
    main()
