"""The one place that talks to SwanLab: scalars only, never fatal.

Offline mode by default (no login, no prompt); ``SWANLAB_MODE`` or
``logging.swanlab_mode`` choose another. Any SwanLab failure is reported once
and logging continues without it: a tracker must never kill training.
"""
from __future__ import annotations

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

    def start(self, cfg: Config, trial_id: str, run_dir: Path) -> None:
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
            settings = Settings(interactive=False, probe=probes)
            self._run = swanlab.init(
                project=cfg.logging.project, name=trial_id,
                group=cfg.logging.group or cfg.sweep.name, id=None, resume=False, mode=mode,
                log_dir=str(run_dir / "swanlog"), config=cfg.to_dict(), settings=settings)
            self._swanlab = swanlab
        except Exception as exc:  # noqa: BLE001 - any tracker failure is non-fatal
            self._fail("start", exc)

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
            self._swanlab.finish()
        except Exception as exc:  # noqa: BLE001
            self._fail("finish", exc)

    def _fail(self, what: str, exc: Exception) -> None:
        self._say(f"swanlab: {what} failed ({type(exc).__name__}: {exc}); continuing without it")
        self._swanlab = None
        self._run = None
