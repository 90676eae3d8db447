"""Schedulers that drive jobs with small POSIX sh scripts, run here (local) or over SSH.

The same scripts start, probe, stop and pack a job on any Linux machine with sh, setsid, tar
and /proc; a subclass only says how to run a script (``_sh``) and where a job's folder is.
A job runs under a wrapper in its own session (its pid is its process group), detached from
the controller, so it survives the controller and a stop kills its whole tree.
"""
from __future__ import annotations

import io
import re
import shlex
import tarfile
from abc import abstractmethod
from pathlib import Path
from typing import Any

from imf.errors import BusyError, FolderInUseError, QueueError
from imf.scheduler.base import Job, JobStatus, Scheduler
from imf.store.layout import ATTEMPTS
from imf.store.runlock import LOCK

# Expand a leading "~/" of the folder argument ($1) on the machine that runs the script.
_CD = r'''case $1 in "~/"*) d="$HOME/${1#"~/"}";; *) d=$1;; esac
'''

# Runs the job: records "PID STARTTIME TOKEN", runs the command (output appended to stdout.log,
# which a trial may append to as well), records "EXIT_CODE TOKEN". TOKEN names the attempt.
WRAPPER = r'''tok=$1; shift
st=$(sed 's/^.*) //' /proc/$$/stat | cut -d' ' -f20)
echo "$$ $st $tok" > pid.tmp && mv pid.tmp pid
"$@" >> stdout.log 2>&1
echo "$? $tok" > exit_code.tmp && mv exit_code.tmp exit_code
'''

# procstat PID prints "STATE STARTTIME" of a process (nothing when there is none);
# alive PID START is true while that very process (same start time, not a zombie) runs.
_PROC = r'''procstat() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1,20; }
alive() { q=$(procstat "$1"); [ -n "$2" ] && [ "${q#* }" = "$2" ] && [ "${q%% *}" != Z ]; }
'''

# args: DIR TOKEN NENV K=V... ARGV...; refuses (exit 4) while the folder's job is alive (its
# files are never moved), refuses (exit 5) while a live trial owns the folder (its trial.lock:
# imf/store/runlock.py; another host's counts while touched in the last 5 minutes), else archives a previous attempt (attempts/N, as imf/store/layout.py
# says), starts detached, prints the pid file.
START = (_CD + _PROC + r'''shift
mkdir -p "$d" && cd "$d" || exit 3
tok=$1; shift
if [ -s pid ]; then
  read p s t < pid
  if alive "$p" "$s"; then echo "busy $p $s $t"; exit 4; fi
fi
if [ -s @LOCK@ ]; then
  read p s h since tid < @LOCK@
  if [ "$h" = "$(uname -n)" ]; then alive "$p" "$s" && { echo "locked $p $h $since $tid"; exit 5; }
  elif [ -n "$(find @LOCK@ -mmin -5 2>/dev/null)" ]; then echo "locked $p $h $since $tid"; exit 5; fi
fi
n=$1; shift
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n-1)); done
if [ -e pid ] || [ -e stdout.log ] || [ -e exit_code ]; then
  k=1; while [ -e "@ATTEMPTS@/$k" ]; do k=$((k+1)); done
  mkdir -p "@ATTEMPTS@/$k"
  for f in *; do [ "$f" = @ATTEMPTS@ ] || mv -- "$f" "@ATTEMPTS@/$k/"; done
fi
case $1 in "~/"*) c="$HOME/${1#"~/"}"; shift; set -- "$c" "$@";; esac
setsid sh -c ''' + shlex.quote(WRAPPER) + r''' imf-job "$tok" "$@" </dev/null >/dev/null 2>&1 &
i=0; while [ ! -s pid ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
cat pid 2>/dev/null
''').replace("@ATTEMPTS@", ATTEMPTS).replace("@LOCK@", LOCK)  # names from the run layout

# args: DIR OFFSET LIMIT; prints key lines, "--", then logs.json.txt from OFFSET.
PROBE = _CD + _PROC + r'''cd "$d" 2>/dev/null || { echo nodir; exit 0; }
if [ -s pid ]; then
  read p s t < pid; echo "pid $p $s $t"
  q=$(procstat "$p"); [ -n "$q" ] && echo "proc $q"
fi
[ -f exit_code ] && echo "exit $(cat exit_code)"
[ -f logs.json.txt ] && echo "logsize $(wc -c < logs.json.txt)"
[ -f stdout.log ] && echo "outsize $(wc -c < stdout.log)"
echo --
[ -f logs.json.txt ] && tail -c +$(($2 + 1)) logs.json.txt | head -c "$3"
exit 0
'''

# args: DIR GRACE_TENTHS TOKEN; TERM to the job's process group, KILL after the grace period.
# Only the attempt named by TOKEN is stopped (any attempt when TOKEN is empty).
STOP = _CD + _PROC + r'''cd "$d" 2>/dev/null && [ -s pid ] || exit 0
read p s t < pid
[ -z "$3" ] || [ "$3" = "$t" ] || exit 0
alive "$p" "$s" || exit 0
kill -TERM -$p 2>/dev/null
i=0; while alive "$p" "$s" && [ $i -lt "$2" ]; do sleep 0.1; i=$((i+1)); done
kill -KILL -$p 2>/dev/null
exit 0
'''

# args: DIR FILE...; a tar of those files that exist (named ./FILE: never read as options).
PACK = _CD + r'''shift
cd "$d" || exit 3
for f in "$@"; do [ -f "$f" ] && printf './%s\n' "$f"; done | tar cf - -T -
'''

_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" lets a final newline in


def parse_probe(out: str, token: str | None = None) -> JobStatus:
    """Turn PROBE's output into a JobStatus (alive = live, not a zombie, same start time).

    With ``token``, a pid file of another attempt reads as "absent" and an exit file of
    another attempt is ignored (an old wrapper may still write one).
    """
    head, _, log = out.partition("--\n")
    keys: dict[str, list[str]] = {}
    for line in head.splitlines():
        parts = line.split()
        if parts:
            keys[parts[0]] = parts[1:]
    pid = keys.get("pid")
    if "nodir" in keys or pid is None or (token and pid[2:3] != [token]):
        return JobStatus("absent")
    status = JobStatus("running", log_size=_int(keys.get("logsize")),
                       out_size=_int(keys.get("outsize")), new_log=log)
    status.pid = int(pid[0]) if pid and pid[0].isdigit() else None
    status.start_time = pid[1] if len(pid) > 1 else None
    proc = keys.get("proc", [])
    alive = len(proc) == 2 and proc[0] != "Z" and proc[1] == status.start_time
    end = keys.get("exit") or []
    if end and end[0].lstrip("-").isdigit() and (not token or end[1:2] == [token]):
        status.state, status.exit_code = "exited", int(end[0])
    elif not alive:
        status.state = "lost"
    return status


def _int(values: list[str] | None) -> int:
    return int(values[0]) if values and values[0].isdigit() else 0


class ShellScheduler(Scheduler):
    """Start, probe, stop and fetch through the scripts above; subclasses run them."""

    log_chunk = 1 << 20  # most bytes of logs.json.txt one poll reads
    stop_grace_s = 5.0

    @abstractmethod
    def _sh(self, script: str, args: list[str], timeout: float = 60.0) -> tuple[int, bytes, str]:
        """Run ``script`` with ``args`` on the slot's machine -> (rc, stdout, stderr)."""

    @property
    def python(self) -> str:
        return str(self.options.get("python") or "python3")

    def slot_env(self) -> dict[str, str]:
        """Environment variables this slot sets for its jobs (e.g. CUDA_VISIBLE_DEVICES)."""
        return {str(k): str(v) for k, v in (self.options.get("env") or {}).items()}

    def config_path(self, job: Job) -> str:
        return job.config

    def command(self, job: Job, run_dir: str, config: str | None = None) -> list[str]:
        values = {"python": self.python, "run_dir": run_dir, "config": config or self.config_path(job)}
        return [_fill(arg, values) for arg in job.argv]

    def planned_config_path(self, job: Job) -> str:
        """Where the job's config will be, worked out without contacting the machine."""
        return self.config_path(job)

    def describe(self, job: Job) -> str:
        env = [f"{k}={v}" for k, v in {**self.slot_env(), **job.env}.items()]
        argv = self.command(job, self.job_dir(job), self.planned_config_path(job))
        return shlex.join((["env", *env] if env else []) + argv)

    def start(self, job: Job) -> dict[str, Any]:
        run_dir = self.job_dir(job)
        env = {**self.slot_env(), **job.env}
        bad = [k for k in env if not _ENV_KEY.match(k)]
        if bad:
            raise QueueError(f"queue '{self.spec}': invalid environment variable name '{bad[0]}'")
        args = [run_dir, job.token, str(len(env)), *(f"{k}={v}" for k, v in env.items()),
                *self.command(job, run_dir)]
        rc, out, err = self._sh(START, args)
        fields = out.decode(errors="replace").split()
        if rc == 4 and fields[:1] == ["busy"]:
            holder = {"queue": self.spec, "dir": run_dir, "local_dir": str(job.run_dir),
                      "pid": int(fields[1]), "start_time": fields[2],
                      "token": fields[3] if len(fields) > 3 else ""}
            raise BusyError(f"queue '{self.spec}': {run_dir} still holds a live job (pid "
                            f"{holder['pid']}) of another attempt; its files stay", holder)
        if rc == 5 and fields[:1] == ["locked"] and len(fields) >= 5:
            raise FolderInUseError(f"queue '{self.spec}': {run_dir} is in use by trial "
                                   f"{' '.join(fields[4:])} (pid {fields[1]} on {fields[2]}, since "
                                   f"{fields[3]}); its files stay")
        if rc != 0 or len(fields) < 2 or not fields[0].isdigit():
            raise QueueError(f"queue '{self.spec}': could not start {job.trial_id} in {run_dir} "
                             f"(exit {rc}): {err.strip()[-300:] or 'no pid file written'}")
        return {"queue": self.spec, "dir": run_dir, "pid": int(fields[0]), "start_time": fields[1],
                "local_dir": str(job.run_dir), "token": job.token}

    def poll(self, handle: dict[str, Any], offset: int = 0) -> JobStatus:
        rc, out, err = self._sh(PROBE, [handle["dir"], str(int(offset)), str(self.log_chunk)])
        if rc != 0:
            raise QueueError(f"queue '{self.spec}': probe of {handle['dir']} failed: {err.strip()[-300:]}")
        return parse_probe(out.decode(errors="replace"), handle.get("token"))

    def stop(self, handle: dict[str, Any]) -> None:
        self._sh(STOP, [handle["dir"], str(int(self.stop_grace_s * 10)), handle.get("token") or ""],
                 timeout=self.stop_grace_s + 30)

    def pack(self, handle: dict[str, Any], files: list[str]) -> None:
        """Copy ``files`` (relative to the job's folder) home into its local folder."""
        rc, out, err = self._sh(PACK, [handle["dir"], *files], timeout=3600)
        if rc != 0 and not out:
            raise QueueError(f"queue '{self.spec}': fetching {handle['dir']} failed: {err.strip()[-300:]}")
        dest = Path(handle["local_dir"])
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(out)) as tar:
            tar.extractall(dest, filter="data")


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg
