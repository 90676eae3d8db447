"""A third-party imf scheduler: ``nohup:N`` runs each job on this machine under nohup, through
imf's job wrapper (``python -m imf.scheduler.wrapper``), as docs/INTERFACES.md "Schedulers" says."""
import json
import subprocess
import sys
import time
from pathlib import Path

from imf.errors import QueueError
from imf.scheduler.base import Handle, Scheduler, fill_argv
from imf.scheduler.wrapper import STARTED
from imf.scheduler.wrapped import parse_probe
from imf.store.layout import RunLayout


def wrapper(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "imf.scheduler.wrapper", *args], capture_output=True, timeout=60)


class NohupScheduler(Scheduler):
    option_keys = ("python",)  # the hosts-file keys it reads

    def job_dir(self, job) -> str:
        return str(job.run_dir.resolve())

    def start(self, job) -> Handle:
        folder = Path(self.job_dir(job))
        folder.mkdir(parents=True, exist_ok=True)
        RunLayout(folder).archive_attempt(STARTED, everything=True)  # an earlier attempt's files
        argv = fill_argv(job.argv, self.python, str(folder), job.config)
        env = [f"{k}={v}" for k, v in job.env.items()]
        subprocess.Popen(["nohup", sys.executable, "-m", "imf.scheduler.wrapper", "run", job.token, *env, "--", *argv],
                         cwd=folder, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        handle = Handle(self.spec, str(folder), str(folder), job.token)
        for _ in range(300):  # the wrapper writes its pid file first
            status = self.poll(handle)
            if status.state != "absent":
                handle.pid, handle.start_time = status.pid, status.start_time
                return handle
            time.sleep(0.1)
        raise QueueError(f"queue '{self.spec}': no pid file in {folder} after 30 s")

    def poll(self, handle: Handle, offset: int = 0):
        out = wrapper("probe", handle.dir, str(offset), str(1 << 20))
        if out.returncode != 0:
            raise QueueError(f"queue '{self.spec}': probe failed: {out.stderr.decode()[-200:]}")
        return parse_probe(json.loads(out.stdout), handle.token)

    def stop(self, handle: Handle) -> None:
        wrapper("stop", handle.dir, "5", handle.token)
