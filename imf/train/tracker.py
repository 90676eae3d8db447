"""The one place that talks to SwanLab: scalars only, never fatal.

Offline mode by default (no login, no prompt); ``SWANLAB_MODE`` or
``logging.swanlab_mode`` choose another. A run holds the scalars and the config
(saved once), no console capture and no system probes. SwanLab's own banner is
kept out of the terminal and stdout.log (off a terminal it wraps at 80 columns);
one line of ours says where the run is and how to sync or view it. Any SwanLab
failure is reported once and logging continues without it: a tracker must
never kill training.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
from pathlib import Path
from typing import Any, Callable

from imf.config import Config


class Tracker:
    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._run: Any = None
        self._swanlab: Any = None

    def start(self, cfg: Config, trial_id: str, run_dir: Path, group: str | None = None) -> None:
        if not cfg.logging.swanlab:
            return
        mode = os.environ.get("SWANLAB_MODE") or cfg.logging.swanlab_mode
        if mode == "cloud":
            mode = "online"
        if mode == "disabled":
            return
        try:
            import swanlab
            from swanlab import Settings

            probes = Settings.Probe(monitor=False, hardware=False, requirements=False,
                                    conda=False, git=False, runtime=False)
            settings = Settings(interactive=False, probe=probes,
                                terminal=Settings.Terminal(proxy_type="none"))
            swanlab.config.update(cfg.to_dict())  # before init: the run saves it once
            with contextlib.redirect_stdout(io.StringIO()):
                self._run = swanlab.init(
                    project=cfg.logging.project, name=trial_id, group=group, id=None,
                    resume=False, mode=mode, log_dir=str(run_dir / "swanlog"), settings=settings)
            self._swanlab = swanlab
            self._say(self._where(mode, run_dir / "swanlog"))
        except Exception as exc:  # noqa: BLE001 - any tracker failure is non-fatal
            self._fail("start", exc)

    def _where(self, mode: str, log_dir: Path) -> str:
        """One line: where the run is and the command that syncs or shows it."""
        if mode == "offline":
            return f"swanlab: offline run in {self._run.dir}; upload it with: swanlab sync {self._run.dir}"
        if mode == "local" and importlib.util.find_spec("swanboard") is None:
            return (f"swanlab: local run in {self._run.dir}; `swanlab watch` shows only runs made "
                    "with SwanLab's board installed: pip install 'imf[board]' before training")
        if mode == "local":
            return f"swanlab: local run in {self._run.dir}; view it with: swanlab watch {log_dir}"
        return f"swanlab: run at {self._run.url}"

    def log(self, scalars: dict[str, Any], step: int) -> None:
        if self._swanlab is None:
            return
        clean = {k: float(v) for k, v in scalars.items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
        try:
            self._swanlab.log(clean, step=step)
        except Exception as exc:  # noqa: BLE001
            self._fail("log", exc)

    def finish(self) -> None:
        if self._swanlab is None:
            return
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # its banner again; ours was said
                self._swanlab.finish()
        except Exception as exc:  # noqa: BLE001
            self._fail("finish", exc)

    def _fail(self, what: str, exc: Exception) -> None:
        self._say(f"swanlab: {what} failed ({type(exc).__name__}: {exc}); continuing without it")
        self._swanlab = None
        self._run = None


def run_group(cfg: Config, overrides: list[str]) -> str | None:
    """The SwanLab group: ``logging.group`` when set; else the sweep's name for a trial a sweep
    started (it passes ``sweep.name=...``); a standalone trial belongs to no group."""
    if cfg.logging.group:
        return cfg.logging.group
    return cfg.sweep.name if any(o.startswith("sweep.name=") for o in overrides) else None
