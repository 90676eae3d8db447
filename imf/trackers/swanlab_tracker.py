"""SwanLab (the default): scalars and the config (saved once), no console capture or probes.

Offline by default (no login, no prompt); ``SWANLAB_MODE`` or ``logging.tracker_options.swanlab.mode``
choose local, cloud or disabled. SwanLab's own banner is kept out of the terminal and
stdout.log; one line of ours says where the run is and how to sync or view it.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from dataclasses import dataclass
from pathlib import Path

from imf.errors import OptionError
from imf.store import SWANLOG

MODES = ("offline", "local", "cloud", "disabled")


@dataclass
class SwanLabOptions:
    mode: str = "offline"  # SWANLAB_MODE wins

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise OptionError("mode", f"got {self.mode!r}, allowed: {', '.join(MODES)}")


def run_id(run_uid: str) -> str | None:
    """The SwanLab run id of an attempt: ``imf trial --resume`` (same run_uid) continues that run
    (offline, a second folder under swanlog/ with the same id, which ``swanlab sync`` joins),
    a rerun (a new run_uid) starts another; None without a run_uid (SwanLab picks one)."""
    return f"imf{run_uid}" if run_uid else None


class SwanLabTracker:
    requires = ("swanlab",)
    Options = SwanLabOptions

    def __init__(self, options: SwanLabOptions | None = None) -> None:
        self.options = options or SwanLabOptions()
        self._swanlab = None
        self._run = None

    def start(self, run) -> str | None:
        mode = os.environ.get("SWANLAB_MODE") or self.options.mode
        mode = "online" if mode == "cloud" else mode
        if mode == "disabled":
            return None
        import swanlab
        from swanlab import Settings

        probes = Settings.Probe(monitor=False, hardware=False, requirements=False,
                                conda=False, git=False, runtime=False)
        settings = Settings(interactive=False, probe=probes, terminal=Settings.Terminal(proxy_type="none"))
        swanlab.config.update(run.config)  # before init: the run saves it once
        log_dir = run.run_dir / SWANLOG
        with contextlib.redirect_stdout(io.StringIO()):
            self._run = swanlab.init(project=run.project, name=run.trial_id, group=run.group,
                                     id=run_id(run.run_uid), resume="allow" if run.run_uid else False,
                                     mode=mode, log_dir=str(log_dir), settings=settings)
        self._swanlab = swanlab
        return self._where(mode, log_dir)

    def _where(self, mode: str, log_dir: Path) -> str:
        if mode == "offline":
            return f"swanlab: offline run in {self._run.dir}; upload it with: swanlab sync {self._run.dir}"
        if mode == "local" and importlib.util.find_spec("swanboard") is None:
            return (f"swanlab: local run in {self._run.dir}; `swanlab watch` shows only runs made "
                    "with SwanLab's board installed: pip install 'imf[board]' before training")
        if mode == "local":
            return f"swanlab: local run in {self._run.dir}; view it with: swanlab watch {log_dir}"
        return f"swanlab: run at {self._run.url}"

    def log(self, scalars: dict[str, float], step: int) -> None:
        if self._swanlab is not None:
            self._swanlab.log(scalars, step=step)

    def finish(self) -> None:
        if self._swanlab is not None:
            with contextlib.redirect_stdout(io.StringIO()):  # its banner again; ours was said
                self._swanlab.finish()
            self._swanlab = None
