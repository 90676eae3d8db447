"""What a trial prints: a progress bar on a terminal, one line per epoch everywhere."""
from __future__ import annotations

import sys
from typing import Any


def progress_bar(epoch: int, step: int, total: int, loss: float) -> None:
    width = 24
    filled = int(width * step / max(1, total))
    sys.stdout.write(f"\repoch {epoch} [{'#' * filled}{'.' * (width - filled)}] {step}/{total} loss {loss:.4f}")
    sys.stdout.flush()


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def epoch_line(record: dict[str, Any], total: int) -> str:
    """One line per epoch. With adaptive weighting the imf loss is ~1 by construction, so the
    mse of the compound velocity is the validation number shown when the objective has one."""
    line = f"epoch {record['epoch'] + 1}/{total} step {record['global_step']} "
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
