"""The ``local`` scheduler: ``local:N`` (GPU N of this machine) and ``local:cpu``.

``local:N`` sets CUDA_VISIBLE_DEVICES=N; ``local:cpu`` hides the GPUs and sets the thread
counts (option ``threads``, default: the cores shared between the sweep's CPU slots). A job
runs in its own session in its trial folder, so it outlives the controller and ``stop`` kills
its whole tree.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

from imf.errors import QueueError
from imf.scheduler.base import Job
from imf.scheduler.shell import ShellScheduler

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


class LocalScheduler(ShellScheduler):

    def __init__(self, spec: str, options: dict[str, Any] | None = None):
        super().__init__(spec, options)
        match = re.match(r"^local:(cpu|\d+)$", spec.split("#", 1)[0].strip())
        if not match:
            raise QueueError(f"queue spec '{spec}': expected local:N (a GPU index) or local:cpu")
        self.device = match.group(1)

    @property
    def python(self) -> str:
        return str(self.options.get("python") or sys.executable)

    def slot_env(self) -> dict[str, str]:
        env = super().slot_env()
        if self.device == "cpu":
            threads = str(max(1, int(self.options.get("threads") or 1)))
            env.setdefault("CUDA_VISIBLE_DEVICES", "")
            for var in THREAD_VARS:
                env.setdefault(var, threads)
        else:
            env.setdefault("CUDA_VISIBLE_DEVICES", self.device)
        return env

    def job_dir(self, job: Job) -> str:
        return str(job.run_dir.resolve())

    def _sh(self, script: str, args: list[str], timeout: float = 60.0) -> tuple[int, bytes, str]:
        try:
            proc = subprocess.run(["sh", "-c", script, "imf", *args], capture_output=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL, env=os.environ.copy())
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise QueueError(f"queue '{self.spec}': local shell failed: {exc}") from None
        return proc.returncode, proc.stdout, proc.stderr.decode(errors="replace")
