"""The ``local`` scheduler: ``local:N`` (GPU N of this machine) and ``local:cpu``.

``local:N`` sets CUDA_VISIBLE_DEVICES=N; ``local:cpu`` hides the GPUs and sets the thread
counts (option ``threads``, default: the cores shared between the sweep's CPU slots). The job
wrapper runs in this process (no process per poll); the job it starts runs in its own session
in its trial folder, so it outlives the controller and ``stop`` kills its whole tree.
"""
from __future__ import annotations

import io
import re
import socket
from typing import Any

from imf.errors import QueueError
from imf.scheduler import wrapper
from imf.scheduler.base import JobRequest
from imf.scheduler.plugin_check import loaded_here, run_here, same_python
from imf.scheduler.wrapped import WrappedScheduler


class LocalScheduler(WrappedScheduler):
    default_threads = 1
    option_keys = ("python", "env", "threads")

    def __init__(self, spec: str, options: dict[str, Any] | None = None):
        super().__init__(spec, options)
        match = re.match(r"^local:(cpu|\d+)$", spec.split("#", 1)[0].strip())
        if not match:
            raise QueueError(f"queue spec '{spec}': expected local:N (a GPU index) or local:cpu")
        self.device = match.group(1)

    def job_dir(self, job: JobRequest) -> str:
        return str(job.run_dir.resolve())

    def host_label(self) -> str:
        return f"this machine ({socket.gethostname()})"

    def check_plugins(self, wanted: list[str]) -> None:
        """The slot's python loads imf and the plugins with the slot's environment, in a process
        (they may import torch); on this process's own python with no ``env`` of its own, plugins
        the plan imported here already are the answer."""
        if same_python(self.python) and not self.options.get("env") and loaded_here(wanted):
            return
        run_here(self.spec, self.python, wanted, env=self.slot_env())

    def _wrapper(self, args: list[str], timeout: float = 60.0) -> tuple[int, bytes, str]:
        out, err = io.BytesIO(), io.StringIO()
        try:
            rc = wrapper.main(args, out, err)
        except OSError as exc:
            raise QueueError(f"queue '{self.spec}': the job wrapper failed: {exc}") from None
        return rc, out.getvalue(), err.getvalue()
