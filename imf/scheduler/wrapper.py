"""The job wrapper every scheduler runs on the host of its slot: ``python -m imf.scheduler.wrapper``.

It is the only writer of a job's files in its run folder (each written whole, then renamed):

    pid         "PID STARTTIME TOKEN"  the wrapper: the job's session and process-group leader
                                       (STARTTIME: field 22 of /proc/PID/stat, so a reused pid
                                       is never taken for the job)
    exit_code   "CODE TOKEN"           the command's exit status (128 + N after signal N); not
                                       written when the wrapper itself got SIGTERM/SIGINT/SIGHUP
                                       (the job was stopped: whoever stopped it knows why);
                                       removed when the same attempt runs again (a batch system
                                       requeued its job)
    claim       "TOKEN"                the attempt that owns the folder, written by ``start`` before
                "revoked TOKEN"        its child exists; a child runs only while the claim is its
                                       own (imf/scheduler/claim.py: the lock, the order of writes)
    stdout.log                         the command's stdout and stderr, appended
    attempts/K/                        an earlier attempt's files, moved there by ``start``

TOKEN names the attempt, so files of an earlier attempt are never read as this one's.

    start DIR TOKEN [K=V ...] -- ARGV [--or-resume-- RESUME_ARGV]
                                       refuse a live job (exit 4, prints "busy PID START TOKEN";
                                       one whose exit_code is written has ended, even while its
                                       wrapper is still exiting)
                                       or a live trial.lock (exit 5, "locked PID HOST SINCE ID"),
                                       or a claim that forbids TOKEN (exit 6, "refused WHY"),
                                       archive an earlier attempt, claim the folder, start ``run``
                                       detached in a new session, print the pid file; with
                                       RESUME_ARGV and a checkpoints/latest.pt in DIR, keep the
                                       earlier attempt's files and run RESUME_ARGV instead (its
                                       host went down, or its job vanished: it resumes)
    run TOKEN [K=V ...] -- ARGV        in the current folder: what ``start`` detaches (a batch
                                       system's job calls ``run_attempt`` directly); nothing
                                       (exit 0) when the folder's claim is not TOKEN's
    revoke DIR TOKEN                   "started" when TOKEN's pid file is there, else "revoked":
                                       TOKEN's job never runs in DIR (its start may be in flight)
    probe DIR OFFSET LIMIT             one JSON object: the files, whether the job lives,
                                       logs.json.txt from OFFSET (at most LIMIT bytes), and when
                                       checkpoints/latest.pt last changed (``latest``, ns)
    stop DIR GRACE_S TOKEN             SIGTERM to the job's process group, SIGKILL after GRACE_S
                                       (only the attempt TOKEN, revoked if it has not started;
                                       any attempt when TOKEN is "")
    pack DIR FILE ...                  a tar of those files that exist, to stdout
    bundle DIR                         a tar of everything in DIR but attempts/ (earlier attempts),
                                       streamed to stdout: what a remote trial brings home
    plugins GROUP:NAME ...             import each plugin as a trial would: "ok", or exit 6 with
                                       "cannot load GROUP plugin 'NAME': why"
    gpus PYTHON [K=V ...]              one JSON object: the CUDA devices PYTHON's torch sees
                                       (imf/scheduler/gpu_probe.py), with the slot's K=V set

It imports neither torch nor the trainer: it starts in a fraction of a second on any host
with imf installed.
"""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from imf import drill
from imf.atomic import atomic_write_text
from imf.errors import ImfError
from imf.scheduler import claim, gpu_probe
from imf.store import (ATTEMPTS, EXIT_CODE, LATEST, LOGS, PID, STDOUT, SUMMARY, RunLayout, checkpoint_name,
                       live_holder, process_start_time)

CLAIM = claim.CLAIM
STARTED = (PID, STDOUT, EXIT_CODE, LOGS, SUMMARY)  # any of them: an attempt ran in this folder
PID_WAIT_S = 20.0
RESUME_SEP = "--or-resume--"  # start's ARGV and the resume command chosen where latest.pt is


@dataclass
class JobFiles:
    """What the wrapper wrote in a folder, as read back."""
    exists: bool
    pid: int | None = None
    start_time: str | None = None
    token: str | None = None
    exit_code: int | None = None
    exit_token: str | None = None

    def alive(self) -> bool:
        """The very process of the pid file runs (same start time, not a zombie)."""
        return self.pid is not None and process_start_time(self.pid) == self.start_time

    def ended(self) -> bool:
        """The attempt of the pid file wrote its exit code: its last write (the wrapper may
        still be exiting, but it touches no file again)."""
        return self.exit_code is not None and self.exit_token == self.token


def read_files(folder: Path) -> JobFiles:
    folder = Path(folder)
    if not folder.is_dir():
        return JobFiles(False)
    files = JobFiles(True)
    pid = _fields(folder / PID)
    if len(pid) >= 2 and pid[0].isdigit():
        files.pid, files.start_time, files.token = int(pid[0]), pid[1], (pid[2] if len(pid) > 2 else "")
    end = _fields(folder / EXIT_CODE)
    if end and end[0].lstrip("-").isdigit():
        files.exit_code, files.exit_token = int(end[0]), (end[1] if len(end) > 1 else "")
    return files


def exit_code_of(folder: Path, token: str) -> int | None:
    """The exit status attempt ``token`` recorded, or None (running, stopped or another's)."""
    files = read_files(folder)
    return files.exit_code if files.exit_token == token else None


def _fields(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except (OSError, UnicodeDecodeError):
        return []


def _home(path: str) -> Path:
    return Path(os.path.expanduser(path)) if path.startswith("~/") else Path(path)


# ---------------------------------------------------------------- the commands

def start(folder: Path, token: str, env: dict[str, str], argv: list[str], out: BinaryIO,
          err: TextIO) -> int:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        err.write(f"cannot make {folder}: {exc}\n")
        return 3
    argv, resume_argv = _split_resume(argv)
    with claim.locked(folder):
        refused = _refused(folder, token, out)
        if refused is not None:
            return refused
        if resume_argv and RunLayout(folder).latest.is_file():
            argv = resume_argv  # its files stay: the trial goes on from its latest.pt
            with open(folder / STDOUT, "ab") as log:
                log.write(f"imf: resuming from {checkpoint_name(LATEST)} (attempt {token})\n".encode())
        else:
            RunLayout(folder).archive_attempt(STARTED, everything=True)
        claim.write_claim(folder, token)  # ownership before the child exists
        drill.point("wrapper-claimed")
        _spawn(folder, token, env, argv)
    deadline = time.monotonic() + PID_WAIT_S
    while time.monotonic() < deadline:
        files = read_files(folder)
        if files.token == token and files.pid is not None:
            out.write(f"{files.pid} {files.start_time} {files.token}\n".encode())
            return 0
        time.sleep(0.05)
    err.write(f"no pid file written in {folder} within {PID_WAIT_S:g} s\n")
    return 3


def _split_resume(argv: list[str]) -> tuple[list[str], list[str]]:
    """``ARGV --or-resume-- RESUME_ARGV`` -> (ARGV, RESUME_ARGV); ([...], []) without one."""
    if RESUME_SEP not in argv:
        return argv, []
    at = argv.index(RESUME_SEP)
    return argv[:at], argv[at + 1:]


def _refused(folder: Path, token: str, out: BinaryIO) -> int | None:
    """Exit 4, 5 or 6 when attempt ``token`` may not start in ``folder`` now (see ``start``)."""
    why = claim.refusal(claim.read_claim(folder), token)
    if why is not None:
        out.write(f"refused {why}\n".encode())
        return 6
    files = read_files(folder)
    if files.alive() and not files.ended():
        out.write(f"busy {files.pid} {files.start_time} {files.token}\n".encode())
        return 4
    holder = live_holder(folder)
    if holder is not None:
        out.write(f"locked {holder.pid} {holder.host} {holder.since} {holder.trial_id}\n".encode())
        return 5
    return None


def _spawn(folder: Path, token: str, env: dict[str, str], argv: list[str]) -> None:
    """Start ``run`` detached and write its pid file (the caller holds the claim lock: the child
    waits for it, then finds its claim and its pid file in place)."""
    if argv and argv[0].startswith("~/"):
        argv = [str(_home(argv[0])), *argv[1:]]
    pairs = [f"{k}={v}" for k, v in env.items()]
    child = subprocess.Popen([sys.executable, "-m", "imf.scheduler.wrapper", "run", token, *pairs, "--", *argv],
                             cwd=folder, start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    drill.point("wrapper-spawned")
    started = process_start_time(child.pid)
    if started is not None:  # (the child writes the same line again when it runs)
        claim.write_pid(folder, child.pid, started, token)
    drill.point("wrapper-pid-written")


def run_attempt(folder: Path, token: str, argv: list[str], env: dict[str, str] | None = None,
                say: str | None = None) -> int:
    """Run ``argv`` in ``folder`` as attempt ``token``: pid file, stdout.log, exit_code.
    ``say``: a line written to stdout.log first (why this command was chosen)."""
    stopped: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # The signal went to the whole process group: the command gets it too; the wrapper
        # outlives it to reap it (a handler, not SIG_IGN, so the command starts with defaults).
        signal.signal(sig, lambda signum, frame: stopped.append(signum))
    with claim.locked(folder):
        if not claim.owns(folder, token):  # revoked, or another attempt claimed it meanwhile
            return 0
        pid = os.getpid()
        claim.write_pid(folder, pid, process_start_time(pid), token)
        if exit_code_of(folder, token) is not None:  # a batch system ran this job before (requeued)
            (folder / EXIT_CODE).unlink()
    with open(folder / STDOUT, "ab") as log:
        if say:
            log.write(say.encode() + b"\n")
            log.flush()
        try:
            proc = subprocess.Popen(argv, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        except OSError as exc:
            log.write(f"imf: cannot run {argv[0] if argv else '(nothing)'}: {exc}\n".encode())
            code = 127
        else:
            while True:
                try:
                    code = proc.wait()
                    break
                except InterruptedError:  # pragma: no cover (PEP 475 retries for us)
                    continue
    code = 128 - code if code < 0 else code
    if not stopped:
        atomic_write_text(folder / EXIT_CODE, f"{code} {token}\n")
    return code


def revoke(folder: Path, token: str) -> str:
    """"started" when attempt ``token``'s pid file is in ``folder`` (it runs, or ran), else
    "revoked": it never runs there, even when its start is still on its way."""
    with claim.locked(folder):
        if read_files(folder).token == token:
            return "started"
        current = claim.read_claim(folder)
        if current is None or current.token == token:
            claim.write_claim(folder, token, revoked=True)
        return "revoked"


def probe(folder: Path, offset: int, limit: int) -> dict[str, Any]:
    files = read_files(folder)
    data: dict[str, Any] = {"exists": files.exists}
    if not files.exists:
        return data
    data.update(pid=files.pid, start_time=files.start_time, token=files.token, alive=files.alive(),
                exit_code=files.exit_code, exit_token=files.exit_token,
                log_size=_size(folder / LOGS), out_size=_size(folder / STDOUT), new_log="",
                latest=_mtime(RunLayout(folder).latest))
    try:
        with open(folder / LOGS, "rb") as f:
            f.seek(offset)
            data["new_log"] = f.read(limit).decode(errors="replace")
    except OSError:
        pass
    return data


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def stop(folder: Path, grace_s: float, token: str) -> None:
    if token and revoke(folder, token) == "revoked":  # not started: now it never will
        return
    files = read_files(folder)
    if (token and files.token != token) or not files.alive() or files.ended():
        return
    try:
        os.killpg(files.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while files.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        os.killpg(files.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def pack(folder: Path, names: list[str], out: BinaryIO) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in names:
            if (folder / name).is_file():
                tar.add(folder / name, arcname=f"./{name}")
    out.write(buffer.getvalue())


def bundle(folder: Path, out: BinaryIO) -> None:
    """Stream a tar of every entry of ``folder`` but ``attempts/`` (links kept as links)."""
    with tarfile.open(fileobj=out, mode="w|") as tar:
        for entry in sorted(folder.iterdir()):
            if entry.name != ATTEMPTS:
                tar.add(entry, arcname=f"./{entry.name}")


def check_plugins(wanted: list[str], out: BinaryIO) -> int:
    """Import every ``GROUP:NAME`` plugin as a trial on this host would, with the packages it
    ``requires``; "ok", or exit 6 with one line naming the first that does not load and why."""
    from imf import registry  # the plugins (and torch, for objectives) only for this command
    for item in wanted:
        group, _, name = item.partition(":")
        try:
            registry.requirements(registry.get(group, name))
        except Exception as exc:  # noqa: BLE001 - any import failure is the answer
            out.write(f"cannot load {group} plugin '{name}': {type(exc).__name__}: {exc}\n".encode())
            return 6
    out.write(b"ok\n")
    return 0


# ---------------------------------------------------------------- the command line

USAGE = ("usage: python -m imf.scheduler.wrapper start DIR TOKEN [K=V ...] -- ARGV | run TOKEN [K=V ...] -- ARGV"
         " | probe DIR OFFSET LIMIT | stop DIR GRACE_S [TOKEN] | revoke DIR TOKEN | pack DIR FILE ..."
         " | bundle DIR | gpus PYTHON [K=V ...] | plugins GROUP:NAME ...")


def main(argv: list[str], out: BinaryIO, err: TextIO) -> int:
    """One command (see the module's docstring); its output to ``out``; the exit status: 2 for
    bad arguments, 3 when the folder cannot be written (one line on ``err``, never a traceback)."""
    try:
        return _command(argv, out, err)
    except (IndexError, ValueError) as exc:
        err.write(f"imf.scheduler.wrapper: bad arguments {argv[:3]!r} ({exc}); {USAGE}\n")
        return 2
    except (OSError, ImfError) as exc:  # e.g. a full disk while writing the pid file
        err.write(f"imf.scheduler.wrapper: {exc}\n")
        return 3


def _command(argv: list[str], out: BinaryIO, err: TextIO) -> int:
    command, args = argv[0], argv[1:]
    if command in ("start", "run"):
        if "--" not in args:
            raise ValueError("no -- before the command")
        head, rest = args[:args.index("--")], args[args.index("--") + 1:]
        if command == "run":
            return run_attempt(Path.cwd(), head[0], rest, _env(head[1:]))
        return start(_home(head[0]), head[1], _env(head[2:]), rest, out, err)
    if command == "plugins":
        return check_plugins(args, out)
    if command == "gpus":
        python = str(_home(args[0])) if args[0].startswith("~/") else args[0]
        out.write(json.dumps(gpu_probe.probe(python, _env(args[1:]))).encode() + b"\n")
        return 0
    folder = _home(args[0])
    if command == "probe":
        out.write(json.dumps(probe(folder, int(args[1]), int(args[2]))).encode() + b"\n")
    elif command == "stop":
        stop(folder, float(args[1]), args[2] if len(args) > 2 else "")
    elif command == "revoke":
        out.write(revoke(folder, args[1]).encode() + b"\n")
    elif command == "pack":
        pack(folder, args[1:], out)
    elif command == "bundle":
        bundle(folder, out)
    else:
        raise ValueError(f"unknown command {command!r}")
    return 0


def _env(pairs: list[str]) -> dict[str, str]:
    bad = [p for p in pairs if "=" not in p]
    if bad:
        raise ValueError(f"{bad[0]!r} is not K=V")
    return dict(pair.split("=", 1) for pair in pairs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdout.buffer, sys.stderr))
