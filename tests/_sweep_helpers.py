"""Helpers of the sweep tests: the stand-in trial command, a real sshd on 127.0.0.1, waits."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
FAKE = HERE / "fake_trial.py"
FAKE_GPUS = HERE / "fake_gpus.py"
# The GPUs the sshd's host plays (IMF_GPU_PROBE): two, 20 GiB free of 24 (a host's real probe:
# host_options(..., gpus=None)).
HOST_GPUS = "0:20480:24576 1:20480:24576"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def fake_command(*options: str) -> str:
    """An IMF_TRIAL_COMMAND prefix running the stand-in trial with ``options``."""
    return " ".join(["{python}", str(FAKE), *options])


def sweep_controller(out: Path, name: str, trial: list[str], *args: str) -> subprocess.Popen:
    """``imf sweep smoke ARGS --name NAME --out OUT`` in a process of its own (a controller that
    can be killed), its trials the stand-in trial with the options ``trial``; its output goes to
    OUT/controller-NAME.log (``controller_story`` tells it when a wait for it times out)."""
    env = {**os.environ, "IMF_TRIAL_COMMAND": fake_command(*trial)}
    cmd = [sys.executable, "-m", "imf", "sweep", "smoke", *args, "--name", name, "--out", str(out)]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"controller-{name}.log", "ab") as log:
        return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def controller_story(controller: subprocess.Popen, sweep_dir: Path, lines: int = 15) -> str:
    """What a controller did, for a wait that timed out: alive or its exit code, then the tails
    of its own output and of the sweep's log."""
    def tail(path: Path) -> str:
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError as exc:
            return f"({exc.strerror})"
    rc = controller.poll()
    return (f"controller {'alive' if rc is None else f'exited {rc}'}; its output:\n"
            f"{tail(sweep_dir.parent / f'controller-{sweep_dir.name}.log')}\n"
            f"{sweep_dir / 'sweep.log'}:\n{tail(sweep_dir / 'sweep.log')}")


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05, story=None):
    """The predicate's first true value within ``timeout`` seconds; else AssertionError, with
    ``story()`` (what the waited-on process did) when given."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s" + (f"\n{story()}" if story else ""))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SshServer:
    port: int
    proc: subprocess.Popen
    key: Path
    known_hosts: Path
    log: Path
    python: Path  # this checkout's imf on the remote side (the venv's may be another checkout's)

    @property
    def user(self) -> str:
        import getpass
        return getpass.getuser()

    def spec(self, device: str = "gpu:0") -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}/{device}"

    def host_options(self, workdir: Path, gpus: str | None = HOST_GPUS) -> dict:
        options = {"workdir": str(workdir), "python": str(self.python),
                   "ssh_options": ["-F", "/dev/null", "-i", str(self.key), "-o", "IdentitiesOnly=yes",
                                   "-o", f"UserKnownHostsFile={self.known_hosts}",
                                   "-o", "StrictHostKeyChecking=yes"]}
        if gpus is not None:
            options["env"] = {"IMF_GPU_PROBE": f"{sys.executable} {FAKE_GPUS} {gpus}"}
        return options

    def hosts_file(self, path: Path, workdir: Path, queues: list[str] | None = None,
                   gpus: str | None = HOST_GPUS) -> Path:
        data = {"hosts": {"127.0.0.1": self.host_options(workdir, gpus)}}
        if queues:
            data["queues"] = queues
        path.write_text(yaml.safe_dump(data))
        return path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def kill_sessions(self) -> int:
        """SIGKILL the sessions this sshd serves (its child processes): connections drop."""
        killed = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == self.proc.pid:
                try:
                    os.kill(int(stat.parent.name), 9)
                    killed += 1
                except ProcessLookupError:
                    pass
        return killed

    def restart(self) -> None:
        """Start sshd again on the same port with the same keys (after ``stop``)."""
        self.proc = _sshd(self.log.parent / "sshd_config", self.log)
        _wait_listening(self.proc, self.port, self.log)


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def start_sshd(folder: Path) -> SshServer:
    """sshd -D on 127.0.0.1:<free port> accepting one generated key, with a known_hosts file."""
    folder.mkdir(parents=True, exist_ok=True)
    _keygen(folder / "host_key")
    _keygen(folder / "user_key")
    (folder / "authorized_keys").write_text((folder / "user_key.pub").read_text())
    port = free_port()
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host_key'}",
        f"PidFile {folder / 'sshd.pid'}", f"AuthorizedKeysFile {folder / 'authorized_keys'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "StrictModes no", "UsePAM no", "MaxSessions 50",
        "MaxStartups 50", ""]))
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    log = folder / "sshd.log"
    proc = _sshd(config, log)
    host_pub = (folder / "host_key.pub").read_text().split()
    known = folder / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    python = folder / "python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={HERE.parent}${{PYTHONPATH:+:$PYTHONPATH}} "
                      f"exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    server = SshServer(port, proc, folder / "user_key", known, log, python)
    _wait_listening(proc, port, log)
    return server


def _sshd(config: Path, log: Path) -> subprocess.Popen:
    with open(log, "a") as err:
        return subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL,
                                stderr=err)


def _wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"sshd exited: {log.read_text()}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    wait_for(listening, timeout=15)
