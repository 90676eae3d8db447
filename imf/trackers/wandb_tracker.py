"""Weights & Biases: offline by default (``WANDB_MODE`` or ``logging.tracker_options.wandb.mode``
win), the run named by the trial id and grouped by its sweep, the config once, scalars only:
no code, git, console or system capture (``pip install 'imf[wandb]'``)."""
from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass

from imf.errors import OptionError

MODES = ("offline", "online", "disabled")


@dataclass
class WandbOptions:
    mode: str = "offline"  # WANDB_MODE wins

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise OptionError("mode", f"got {self.mode!r}, allowed: {', '.join(MODES)}")


class WandbTracker:
    requires = ("wandb",)
    Options = WandbOptions

    def __init__(self, options: WandbOptions | None = None) -> None:
        self.options = options or WandbOptions()
        self._run = None

    def start(self, run) -> str | None:
        mode = os.environ.get("WANDB_MODE") or self.options.mode
        if mode == "disabled":
            return None
        import wandb

        # wandb makes its own "wandb/" under dir: <run>/wandb/offline-run-*/ (layout.WANDB)
        settings = wandb.Settings(console="off", save_code=False, disable_git=True,
                                  x_disable_stats=True, x_disable_meta=True, silent=True)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self._run = wandb.init(project=run.project, name=run.trial_id, group=run.group,
                                   config=run.config, dir=str(run.run_dir), mode=mode, settings=settings,
                                   reinit="create_new", id=f"imf{run.run_uid}" if run.run_uid else None,
                                   resume="allow" if run.run_uid else None)  # a resume continues its run
        where = self._run.dir.removesuffix("/files")
        if mode == "offline":
            return f"wandb: offline run in {where}; upload it with: wandb sync {where}"
        return f"wandb: run at {self._run.url}"

    def log(self, scalars: dict[str, float], step: int) -> None:
        if self._run is not None:
            self._run.log(scalars, step=step)

    def finish(self) -> None:
        if self._run is not None:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                self._run.finish()
            self._run = None
