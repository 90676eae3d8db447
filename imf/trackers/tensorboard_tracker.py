"""TensorBoard: event files in the run folder's ``tensorboard/``, so ``tensorboard --logdir runs/``
shows every trial of a sweep side by side (torch.utils.tensorboard; ``pip install 'imf[tensorboard]'``)."""
from __future__ import annotations

from imf.store import TENSORBOARD


class TensorBoardTracker:
    requires = ("tensorboard",)

    def __init__(self) -> None:
        self._writer = None

    def start(self, run) -> str:
        from torch.utils.tensorboard import SummaryWriter

        log_dir = run.run_dir / TENSORBOARD
        self._writer = SummaryWriter(log_dir=str(log_dir), flush_secs=30)
        return f"tensorboard: event files in {log_dir}; view them with: tensorboard --logdir {run.run_dir.parent}"

    def log(self, scalars: dict[str, float], step: int) -> None:
        for key, value in scalars.items():
            self._writer.add_scalar(key, value, global_step=step)

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
