"""A private single-node Slurm cluster for the tests: munged, slurmctld and slurmd in a folder.

This host is the only node (CPUs = nproc), partition ``debug``; no accounting, no cgroups
(proctrack/linuxproc, task/none). Every daemon gets its own socket, pid, log, state and spool
paths under the folder and free ports, so nothing of a system-wide Slurm or munge is touched.
Client commands find the cluster through SLURM_CONF (``env``). ``stop`` ends the daemons by pid.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")


def _binary(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}")
                                       if os.access(p, os.X_OK)), None)


def missing_binaries() -> list[str]:
    """The Slurm and munge programs this host lacks (empty: a cluster can be started)."""
    return [name for name in (*DAEMONS, *CLIENTS) if _binary(name) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_line(host: str) -> str:
    """``slurmd -C``'s description of this host, with the node name and address we use."""
    out = subprocess.run([_binary("slurmd"), "-C"], capture_output=True, text=True,
                         timeout=60).stdout
    words = [w for w in out.split() if not w.startswith(("NodeName=", "UpTime="))]
    return f"NodeName={host} NodeAddr=127.0.0.1 " + " ".join(words) + " State=UNKNOWN"


@dataclass
class SlurmCluster:
    folder: Path
    host: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    @property
    def socket(self) -> Path:
        return self.folder / "munge.socket"

    def env(self) -> dict[str, str]:
        """What a client of this cluster needs in its environment."""
        return {"SLURM_CONF": str(self.conf)}

    def write_conf(self) -> None:
        f = self.folder
        for sub in ("state", "spool"):
            (f / sub).mkdir(parents=True, exist_ok=True)
        self.conf.write_text("\n".join([
            "ClusterName=imftest", f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", f"AuthInfo=socket={self.socket}",
            f"StateSaveLocation={f / 'state'}", f"SlurmdSpoolDir={f / 'spool'}",
            f"SlurmctldPidFile={f / 'slurmctld.pid'}", f"SlurmdPidFile={f / 'slurmd.pid'}",
            f"SlurmctldLogFile={f / 'slurmctld.log'}", f"SlurmdLogFile={f / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "MpiDefault=none", "ReturnToService=2", "InactiveLimit=0", "KillWait=5",
            "MinJobAge=600", "SlurmctldTimeout=60", "SlurmdTimeout=120",
            "SlurmctldParameters=enable_configless",
            _node_line(self.host),
            f"PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP", ""]))

    def _start_munged(self) -> None:
        key = self.folder / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        self.procs["munged"] = subprocess.Popen(
            [_binary("munged"), "--foreground", "--force", f"--socket={self.socket}",
             f"--key-file={key}", f"--pid-file={self.folder / 'munged.pid'}",
             f"--log-file={self.folder / 'munged.log'}", f"--seed-file={self.folder / 'munged.seed'}"],
            stdout=subprocess.DEVNULL, stderr=open(self.folder / "munged.err", "ab"))
        self._wait(lambda: self.socket.exists(), "munged", 30)

    def _daemon(self, name: str, *args: str) -> None:
        self.procs[name] = subprocess.Popen(
            [_binary(name), "-D", *args], env={**os.environ, **self.env()},
            stdout=subprocess.DEVNULL, stderr=open(self.folder / f"{name}.err", "ab"))

    def _wait(self, ready, what: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}): {self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} not ready within {timeout}s: {self.logs()}")

    def _node_idle(self) -> bool:
        out = subprocess.run([_binary("sinfo"), "-h", "-N", "-o", "%t"], capture_output=True,
                             text=True, env={**os.environ, **self.env()}, timeout=60).stdout
        return out.strip() in ("idle", "mix", "alloc")

    def start(self, timeout: float = 180.0) -> "SlurmCluster":
        self.folder.mkdir(parents=True, exist_ok=True)
        self.write_conf()
        self._start_munged()
        self._daemon("slurmctld", "-i")  # -i: ignore state left by an earlier run
        self._daemon("slurmd", "-N", self.host)
        self._wait(self._node_idle, "the node", timeout)
        return self

    def logs(self) -> str:
        parts = []
        for name in ("munged.err", "slurmctld.log", "slurmd.log", "slurmctld.err", "slurmd.err"):
            path = self.folder / name
            if path.exists():
                parts.append(f"--- {name}:\n" + path.read_text(errors="replace")[-1500:])
        return "\n".join(parts)

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
        self.procs.clear()
