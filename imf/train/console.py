"""What a trial prints: a progress bar on a terminal, one line per epoch everywhere.

Epochs are counted from 1 wherever people read them (these lines, the bar, ``imf status``,
``imf report``); logs.json.txt, summary.json and checkpoints keep Diffusion Policy's 0-based
``epoch`` index.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


def shown(epoch: int) -> int:
    """The number people see for the 0-based ``epoch`` index."""
    return epoch + 1


def progress_text(epoch: int, num_epochs: int, budget_s: float | None = None, clock: str = "wall",
                  train_s: float | None = None) -> str:
    """"epoch 12/400", or under a time budget, which ends the run long before epoch 400,
    "epoch 12 · 6.1/15.0 min cpu" (training time spent of the budget, on its clock)."""
    if budget_s is None:
        return f"epoch {shown(epoch)}/{num_epochs}"
    return f"epoch {shown(epoch)} · {(train_s or 0.0) / 60:.1f}/{budget_s / 60:.1f} min {clock}"


class EpochBar:
    """One epoch's steps as a transient rich bar on the terminal (never in stdout.log)."""

    def __init__(self, label: str, steps: int) -> None:
        self.progress = Progress(
            TextColumn(label), BarColumn(), MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"), TimeRemainingColumn(),
            console=Console(file=sys.stdout), transient=True, refresh_per_second=4)
        self.task = self.progress.add_task("train", total=steps, loss="-")
        self.progress.start()

    def step(self, loss: float, steps: int = 1) -> None:
        # Drawn by rich's own refresh thread: a draw per step costs ~2 ms on the training path.
        self.progress.update(self.task, advance=steps, loss=f"{loss:.4f}")

    def close(self) -> None:
        self.progress.stop()


@contextmanager
def rollout_status(epoch: int, n_test: int, tty: bool) -> Iterator[None]:
    """A spinner while the rollouts of ``epoch`` run, on a terminal only."""
    if not tty:
        yield
        return
    with Console(file=sys.stdout).status(f"epoch {shown(epoch)}: rollouts on {n_test} test seeds"):
        yield


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def epoch_line(record: dict[str, Any], total: int, budget_s: float | None = None, clock: str = "wall") -> str:
    """One line per epoch. With adaptive weighting the imf loss is ~1 by construction, so the
    mse of the compound velocity is the validation number shown when the objective has one."""
    line = f"{progress_text(record['epoch'], total, budget_s, clock, record.get('train_s'))} step {record['global_step']} "
    if "train_mse" in record:
        line += f"train_mse {_fmt(record['train_mse'])} val_mse {_fmt(record.get('val_mse'))} "
    else:
        line += f"train_loss {_fmt(record['train_loss'])} val_loss {_fmt(record['val_loss'])} "
    if record.get("val_action_rmse") is not None:
        line += f"val_action_rmse {record['val_action_rmse']:.1f} "
    if record.get("val_hold_still_rmse") is not None:
        line += f"(hold still {record['val_hold_still_rmse']:.1f}) "
    line += f"lr {record['lr']:.2e}"
    if "test_mean_score" in record:
        line += (f" test_mean_score {record['test_mean_score']:.4f}"
                 f" success {record['test_success_rate']:.2f}")
        if record.get("new_best"):
            line += " (best)"
    return line
