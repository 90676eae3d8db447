"""Saving a trial's state each epoch and continuing from it after a crash (``--resume``)."""
from __future__ import annotations

from typing import Any

from imf.train import checkpoint as ckpt_io


def trial_state(trial: Any, record: dict[str, Any]) -> dict[str, Any]:
    """Everything needed to score the policy later or to continue training exactly."""
    return {
        "config": trial.cfg.to_dict(), "normalizer": trial.policy.normalizer.state_dict(),
        "policy": trial.policy.state_dict(),
        "ema": trial.ema.averaged_model.state_dict() if trial.ema is not None else None,
        # The averaged weights are stored once, under "ema"; this keeps only its counters.
        "ema_state": ({k: v for k, v in trial.ema.state_dict().items() if k != "averaged_model"}
                      if trial.ema is not None else None),
        "optimizer": trial.optimizer.state_dict(), "lr_schedule": trial.lr_schedule.state_dict(),
        "epoch": record["epoch"], "global_step": trial.global_step,
        "scores": {"test_mean_score": record.get("test_mean_score"),
                   "best": list(trial.best) if trial.best else None,
                   "best_success_rate": trial.best_success, "last": trial.last_score},
        "trainer": {"stopper": trial.stopper.state_dict(), "divergence": trial.divergence.state_dict(),
                    "topk": trial.topk.state_dict(), "elapsed_s": trial.elapsed(),
                    "train_s": trial.clock.seconds()},
        "rng": ckpt_io.rng_state(), "code_version": ckpt_io.code_version(),
        "trial_id": trial.opts.trial_id,
    }


def save_epoch(trial: Any, record: dict[str, Any]) -> None:
    """latest.pt every epoch; best.pt and a top-k file when the rollout earns them."""
    folder = trial.run_dir / "checkpoints"
    latest = folder / "latest.pt"
    ckpt_io.save_checkpoint(latest, trial_state(trial, record))
    if record.get("new_best"):
        ckpt_io.copy_checkpoint(latest, folder / "best.pt")
    if "test_mean_score" in record:
        trial.topk.add(record["test_mean_score"], record["epoch"], latest)


def restore_latest(trial: Any, state: dict[str, Any]) -> None:
    """Continue from latest.pt: weights, optimizer, schedule, RNG, counters, log."""
    trial.policy.load_state_dict(state["policy"])
    if trial.ema is not None and state.get("ema_state"):
        trial.ema.load_state_dict({**state["ema_state"], "averaged_model": state["ema"]})
    trial.optimizer.load_state_dict(state["optimizer"])
    trial.lr_schedule.load_state_dict(state["lr_schedule"])
    trial.epoch, trial.global_step = state["epoch"] + 1, state["global_step"]
    scores, trainer = state["scores"], state["trainer"]
    trial.best = tuple(scores["best"]) if scores["best"] else None
    trial.best_success, trial.last_score = scores["best_success_rate"], scores["last"]
    trial.stopper.load_state_dict(trainer["stopper"])
    trial.divergence.load_state_dict(trainer["divergence"])
    trial.topk.load_state_dict(trainer["topk"])
    trial.elapsed_before = trainer["elapsed_s"]
    trial.clock.spent_s = trainer.get("train_s", 0.0)
    ckpt_io.set_rng_state(state["rng"])
    dropped = trial.log.truncate_after(state["epoch"])
    trial.say(f"resume: continuing at epoch {trial.epoch + 1} from latest.pt"
              + (f" (dropped {dropped} log lines written after it)" if dropped else ""))
