"""The ``ssh`` scheduler: ``ssh://[user@]host[:port]/gpu:N`` (or ``/cpu``) through OpenSSH.

It runs the system ``ssh`` client, so ~/.ssh/config, keys, agents and jump hosts work, with
BatchMode (never a prompt), ConnectTimeout, ServerAliveInterval and one shared master
connection per host (ControlMaster). Host key checking stays as the user's ssh config says;
pass ``-o StrictHostKeyChecking=accept-new`` in ``ssh_options`` to relax it.

Options (hosts YAML): ``workdir`` (default ``~/imf-runs``; trial folders are
``<workdir>/<sweep>/<trial>``), ``python`` (default ``python3``), ``ssh_options`` (extra ssh
arguments, e.g. ``[-i, KEY, -F, CONFIG]``), ``user``, ``port``, ``env``, ``fetch`` (``all``, the
default: an ended attempt's whole folder comes home; ``results``: its summary, logs and best.pt;
imf/scheduler/fetch.py).
Every remote argument is shell-quoted; the job starts detached and survives the session.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shlex
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from imf.errors import QueueError
from imf.scheduler.base import Handle, JobRequest, JobStatus
from imf.scheduler.plugin_check import CHECK_TIMEOUT_S, failure
from imf.scheduler.wrapped import WrappedScheduler
from imf.scheduler.fetch import RESULTS, RESUMABLE, fetch_mode, install, temporary
from imf.scheduler.wrapped import parse_probe
from imf.store import PID, RunLayout, read_summary

FETCH_TIMEOUT_S = 6 * 3600.0  # a trial's whole folder may be many checkpoints over a slow link
SPEC_RE = re.compile(r"^ssh://(?:(?P<user>[^@/\s]+)@)?(?P<host>[^:/@\s]+)(?::(?P<port>\d+))?"
                     r"/(?P<device>gpu:\d+|cpu)$")
BASE_OPTIONS = ("BatchMode=yes", "ConnectTimeout=10", "ServerAliveInterval=15",
                "ServerAliveCountMax=4", "ControlMaster=auto", "ControlPersist=60")
CHECK = r'''case $1 in "~/"*) set -- "$HOME/${1#"~/"}";; esac
command -v "$1" >/dev/null || exit 7
why=$("$1" -c "import imf.scheduler.wrapper" 2>&1) || { printf '%s\n' "$why" | tail -n 1; exit 8; }
echo ok
'''
SEND = r'''case $1 in "~/"*) d="$HOME/${1#"~/"}";; *) d=$1;; esac
if [ -d "$d" ] && [ -n "$(ls -A "$d")" ]; then cat >/dev/null; echo kept; exit 0; fi
mkdir -p "$d" && tar -xf - -C "$d" && echo sent
'''
UPLOAD = r'''case $1 in "~/"*) d="$HOME/${1#"~/"}";; *) d=$1;; esac
mkdir -p "$d" && cat > "$d/$2"
'''


class OldWrapper(Exception):
    """The host's job wrapper does not know a command (an older imf there)."""


def control_dir() -> Path:
    """A short private folder for the master connections' sockets (paths are length-limited).

    Made 0700; an existing one is used only when it is a real folder of ours that neither the
    group nor others may write (a socket there is a logged-in connection to a host)."""
    path = Path(tempfile.gettempdir()) / f"imf-ssh-{os.getuid()}"
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise QueueError(f"cannot make the ssh control folder {path}: {exc}") from None
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise QueueError(f"ssh control folder {path} is not a folder (a link?); remove it")
    if info.st_uid != os.getuid():
        raise QueueError(f"ssh control folder {path} is not yours (owner uid {info.st_uid}); "
                         f"remove it")
    if info.st_mode & 0o022:
        raise QueueError(f"ssh control folder {path} may be written by group or world "
                         f"(mode {info.st_mode & 0o777:o}); chmod 700 it or remove it")
    return path


class SshScheduler(WrappedScheduler):
    default_python = "python3"
    option_keys = ("user", "port", "workdir", "python", "ssh_options", "env", "threads", "fetch")
    handle_keys = {"host": str}

    def __init__(self, spec: str, options: dict[str, Any] | None = None):
        super().__init__(spec, options)
        match = SPEC_RE.match(spec.split("#", 1)[0].strip())
        if not match:
            raise QueueError(f"queue spec '{spec}': expected ssh://[user@]host[:port]/gpu:N or "
                             f"ssh://[user@]host[:port]/cpu")
        self.host = match.group("host")
        self.user = match.group("user") or self.options.get("user")
        self.port = match.group("port") or self.options.get("port")
        self._check_target()
        device = match.group("device")
        self.device = "cpu" if device == "cpu" else device.split(":")[1]
        extra = self.options.get("ssh_options") or []
        self.extra = shlex.split(extra) if isinstance(extra, str) else [str(a) for a in extra]
        self.workdir = str(self.options.get("workdir") or "~/imf-runs").rstrip("/")
        self.fetch_mode = fetch_mode(spec, self.options.get("fetch"))
        self._synced: dict[str, int] = {}  # job folder -> the latest.pt (mtime) last brought home
        self._home: str | None = None

    def _check_target(self) -> None:
        """Host, user and port may never reach ssh as options (``-oProxyCommand=...``)."""
        for what, value in (("host", self.host), ("user", self.user)):
            if value is not None and (not isinstance(value, str) or value.startswith("-")
                                      or not value.strip() or any(c.isspace() for c in value)):
                raise QueueError(f"queue '{self.spec}': {what} {value!r} could be read as an "
                                 f"ssh option (or is empty); it may not start with '-'")
        if self.port is not None and not str(self.port).isdigit():
            raise QueueError(f"queue '{self.spec}': port {self.port!r} is not a number (an ssh "
                             f"option cannot ride in it)")

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    def _options(self) -> list[str]:
        argv = [*self.extra]  # the user's options first: for ssh the first value wins
        for opt in BASE_OPTIONS:
            argv += ["-o", opt]
        # One master per host and per set of user options (known_hosts, identity, ...).
        key = hashlib.sha256("\0".join(self.extra).encode()).hexdigest()[:10]
        argv += ["-o", f"ControlPath={control_dir()}/{key}-%C"]
        if self.port:
            argv += ["-p", str(self.port)]
        return argv

    def ssh_argv(self) -> list[str]:
        return ["ssh", *self._options(), "--", self.target]

    def control_argv(self, command: str) -> list[str]:
        """``ssh -O COMMAND`` for this queue's master connection (check, exit)."""
        return ["ssh", *self._options(), "-O", command, "--", self.target]

    def close(self) -> None:
        """Close the shared master connection: it must not outlive the sweep."""
        try:
            subprocess.run(self.control_argv("exit"), capture_output=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired, QueueError):
            pass

    def _ssh(self, remote: str, timeout: float, data: bytes | None = None,
             sink: BinaryIO | None = None) -> tuple[int, bytes, str]:
        """Run ``remote`` on the host -> (rc, stdout, stderr); with ``sink`` stdout goes there."""
        out = subprocess.PIPE if sink is None else sink
        try:
            proc = subprocess.run([*self.ssh_argv(), remote], input=data, stdout=out, stderr=subprocess.PIPE,
                                  timeout=timeout, stdin=None if data is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise QueueError(f"queue '{self.spec}': ssh to {self.target} timed out after "
                             f"{timeout:g}s") from None
        except OSError as exc:
            raise QueueError(f"queue '{self.spec}': cannot run ssh: {exc}") from None
        err = proc.stderr.decode(errors="replace")
        if proc.returncode == 255:
            last = err.strip().splitlines()[-1] if err.strip() else "connection failed"
            raise QueueError(f"queue '{self.spec}': host {self.target} unreachable: {last}")
        return proc.returncode, proc.stdout or b"", err

    def _sh(self, script: str, args: list[str], timeout: float = 60.0,
            data: bytes | None = None) -> tuple[int, bytes, str]:
        remote = " ".join(["sh", "-c", shlex.quote(script), "imf", *(shlex.quote(a) for a in args)])
        return self._ssh(remote, timeout, data)

    def _wrapper(self, args: list[str], timeout: float = 60.0, env: dict[str, str] | None = None,
                 sink: BinaryIO | None = None) -> tuple[int, bytes, str]:
        py = self.python  # a "~/" path is expanded by the remote shell, so it is left unquoted
        py = '"$HOME"/' + shlex.quote(py[2:]) if py.startswith("~/") else shlex.quote(py)
        prefix = ["env", *(shlex.quote(f"{k}={v}") for k, v in env.items())] if env else []
        return self._ssh(" ".join([*prefix, py, "-m", "imf.scheduler.wrapper",
                                   *(shlex.quote(a) for a in args)]), timeout, sink=sink)

    def check_plugins(self, wanted: list[str]) -> None:
        """The host's python loads the plugins with the slot's environment, as its trials will."""
        rc, out, err = self._wrapper(["plugins", *wanted], CHECK_TIMEOUT_S, env=self.slot_env())
        why = failure(rc, out, err)
        if why:
            raise QueueError(f"queue '{self.spec}': {self.host_label()} {why}")

    def check(self) -> None:
        rc, out, err = self._sh(CHECK, [self.python], timeout=30)
        if rc == 7:
            raise QueueError(f"queue '{self.spec}': python '{self.python}' not found on {self.host} "
                             f"(set 'python' for this host in the hosts file)")
        if rc == 8:
            why = out.decode(errors="replace").strip()[-300:] or "no error printed"
            raise QueueError(f"queue '{self.spec}': '{self.python}' on {self.host} cannot import imf "
                             f"({why}); install imf there, or set 'python' for this host in the hosts file")
        if rc != 0 or b"ok" not in out:
            raise QueueError(f"queue '{self.spec}': {self.host} cannot run jobs: {err.strip()[-200:]}")

    def host_label(self) -> str:
        return f"{self.host}:{self.port}" if self.port else self.host

    def sweep_dir(self, job: JobRequest) -> str:
        return f"{self.workdir}/{job.sweep}"

    def job_dir(self, job: JobRequest) -> str:
        return f"{self.sweep_dir(job)}/{job.trial_id}"

    def remote_path(self, path: str) -> str:
        """``path`` with a leading ``~/`` replaced by the remote home (asked once)."""
        if not path.startswith("~/"):
            return path
        if self._home is None:
            rc, out, err = self._sh('printf %s "$HOME"', [])
            if rc != 0 or not out.strip():
                raise QueueError(f"queue '{self.spec}': cannot read $HOME on {self.host}: {err.strip()}")
            self._home = out.decode().strip()
        return self._home + path[1:]

    def config_path(self, job: JobRequest) -> str:
        if job.config_text is None:
            return job.config
        return self.remote_path(f"{self.sweep_dir(job)}/{Path(job.config).name}")

    def planned_config_path(self, job: JobRequest) -> str:
        if job.config_text is None:
            return job.config
        return f"{self.sweep_dir(job)}/{Path(job.config).name}"  # "~/" is left to the remote shell

    def describe(self, job: JobRequest) -> str:
        return f"ssh {self.target}: {super().describe(job)}"

    def start(self, job: JobRequest) -> Handle:
        if job.config_text is not None:
            rc, _, err = self._sh(UPLOAD, [self.sweep_dir(job), Path(job.config).name],
                                  data=job.config_text.encode())
            if rc == 2 and "unknown command" in err:
                raise OldWrapper(err.strip()[-300:])
            if rc != 0:
                raise QueueError(f"queue '{self.spec}': cannot write the config on {self.host}: "
                                 f"{err.strip()}")
        if job.resume:
            self._send_checkpoint(job)
        handle = super().start(job)
        handle.extra["host"] = self.target
        return handle

    def _send_checkpoint(self, job: JobRequest) -> None:
        """A trial resumed here after its host died elsewhere: its latest.pt (kept home while it
        ran) goes into its folder here, when that folder is empty (else what is there stays)."""
        home = Path(job.run_dir)
        if not RunLayout(home).latest.is_file():
            return
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name in RESUMABLE:
                if (home / name).is_file():
                    tar.add(home / name, arcname=f"./{name}")
        rc, _, err = self._sh(SEND, [self.job_dir(job)], timeout=FETCH_TIMEOUT_S, data=buffer.getvalue())
        if rc != 0:
            raise QueueError(f"queue '{self.spec}': cannot send {job.trial_id}'s latest.pt to {self.host}: "
                             f"{err.strip()[-300:]}")

    def poll(self, handle: Handle, offset: int = 0) -> JobStatus:
        """The job's status; a new latest.pt of a running job comes home (RESUMABLE, ``fetch: all``)."""
        data = self.probe(handle, offset)
        status = parse_probe(data, handle.token)
        latest = data.get("latest")
        if status.state == "running" and self.fetch_mode == "all" and latest and \
                self._synced.get(handle.dir) != latest:
            try:
                self._receive(handle, ["pack", handle.dir, PID, *RESUMABLE], replace=False)
                self._synced[handle.dir] = latest
            except (QueueError, OSError):
                pass  # tried again at the next poll; the job itself is not affected
        return status

    def fetch(self, handle: Handle) -> None:
        """Bring the ended attempt's folder home (``fetch: all``), or its results and best.pt."""
        if self.fetch_mode == "all":
            try:
                self._receive(handle, ["bundle", handle.dir], replace=True)
                return
            except OldWrapper:  # the host's imf predates "bundle": its results come home
                pass
        self._receive(handle, ["pack", handle.dir, *RESULTS], replace=False)
        summary = read_summary(Path(handle.local_dir))
        best = summary.checkpoints.best if summary else None
        if best and not Path(best).is_absolute() and best not in RESULTS and ".." not in best:
            self._receive(handle, ["pack", handle.dir, best], replace=False)

    def _receive(self, handle: Handle, args: list[str], replace: bool) -> None:
        """A wrapper command's tar, streamed to a file beside the home folder, installed there."""
        dest = Path(handle.local_dir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tar_path = temporary(dest, "fetch.tar")
        try:
            with open(tar_path, "wb") as sink:
                rc, _, err = self._wrapper(args, timeout=FETCH_TIMEOUT_S, sink=sink)
            if rc == 2 and "unknown command" in err:
                raise OldWrapper(err.strip()[-300:])
            if rc != 0:
                raise QueueError(f"queue '{self.spec}': fetching {handle.dir} from {self.host} failed "
                                 f"(exit {rc}): {err.strip()[-300:] or 'no error printed'}")
            install(tar_path, dest, handle.token, replace=replace)
        finally:
            tar_path.unlink(missing_ok=True)
