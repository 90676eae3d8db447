"""A trial's progress (``TrainState``), and saving it each epoch with the weights so that
``--resume`` continues a crashed run exactly."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from imf.store import BEST, LATEST, SNAPSHOTS
from imf.train import checkpoint as ckpt_io
from imf.train.parts import TrainParts
from imf.version import code_version


@dataclass
class TrainState:
    """Counters and results so far. ``state_dict`` holds what a resume needs (the global RNG
    state with it; the shuffle order needs none: it is reseeded from seed and epoch)."""

    epoch: int = 0  # the next epoch to run, 0-based
    global_step: int = 0
    samples: int = 0  # training windows seen (steps x batch, the early batch's steps at its own)
    best: tuple[float, int] | None = None  # (test_mean_score, epoch)
    best_success: float | None = None  # test success rate of the best rollout
    last_score: float | None = None
    status: str = "running"  # then completed, stopped_early, diverged or failed
    reason: str = ""  # why it diverged or failed
    elapsed_before: float = 0.0  # seconds of the attempts before a resume
    hold_still_logged: bool = False  # the first epoch's line has val_hold_still_rmse
    started_at: float = field(default_factory=time.time)

    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.started_at

    def state_dict(self) -> dict[str, Any]:
        """The checkpoint's epoch (the last one done), step, scores and RNG state."""
        return {"epoch": self.epoch - 1, "global_step": self.global_step, "samples": self.samples,
                "scores": {"best": list(self.best) if self.best else None,
                           "best_success_rate": self.best_success, "last": self.last_score},
                "rng": ckpt_io.rng_state()}

    def load_state_dict(self, state: dict[str, Any], elapsed_s: float, batch_size: int) -> None:
        """Continue after the checkpoint's epoch; restores the global RNG state. A latest.pt
        without a sample count trained one ``batch_size`` throughout."""
        scores = state["scores"]
        self.epoch, self.global_step = state["epoch"] + 1, state["global_step"]
        self.samples = state.get("samples", self.global_step * batch_size)
        self.best = tuple(scores["best"]) if scores["best"] else None
        self.best_success, self.last_score = scores["best_success_rate"], scores["last"]
        self.elapsed_before, self.hold_still_logged = elapsed_s, self.epoch > 0
        ckpt_io.set_rng_state(state["rng"])


def checkpoint_of(cfg_dict: dict[str, Any], parts: TrainParts, state: TrainState,
                  record: dict[str, Any], trial_id: str) -> dict[str, Any]:
    """Everything needed to score the policy later or to continue training exactly."""
    ema = parts.ema
    ckpt = {
        # One copy of the normaliser (the weights' own extra state is dropped: see
        # ckpt_io.weights_to_save), the averaged weights once, under "ema", with their counters.
        "config": cfg_dict, "normalizer": parts.policy.normalizer.state_dict(),
        "policy": ckpt_io.weights_to_save(parts.policy.state_dict()),
        "ema": ckpt_io.weights_to_save(ema.averaged_model.state_dict()) if ema is not None else None,
        "ema_state": ema.counters() if ema is not None else None,
        "optimizer": parts.optimizer.state_dict(), "lr_schedule": parts.lr_schedule.state_dict(),
        **state.state_dict(),
        "trainer": {"stopper": parts.stopper.state_dict(), "divergence": parts.divergence.state_dict(),
                    "topk": parts.topk.state_dict(), "elapsed_s": state.elapsed(),
                    "train_s": parts.clock.seconds()},
        "code_version": code_version(), "trial_id": trial_id,
    }
    ckpt["scores"]["test_mean_score"] = record.get("test_mean_score")
    return ckpt


def save_epoch(ckpt: dict[str, Any], parts: TrainParts, record: dict[str, Any], snapshot: bool = False) -> None:
    """latest.pt; best.pt and a top-k file when the rollout earns them; with ``snapshot``, a
    copy kept as snapshots/epoch=NNNN.pt (a curve of scores against samples looks at these)."""
    latest = parts.topk.folder / LATEST
    ckpt_io.save_checkpoint(latest, ckpt)
    if snapshot:
        (parts.topk.folder / SNAPSHOTS).mkdir(exist_ok=True)
        ckpt_io.copy_checkpoint(latest, parts.topk.folder / SNAPSHOTS / f"epoch={record['epoch']:04d}.pt")
    if record.get("new_best"):
        ckpt_io.copy_checkpoint(latest, parts.topk.folder / BEST)
    if "test_mean_score" in record:
        parts.topk.add(record["test_mean_score"], record["epoch"], latest)


def restore(parts: TrainParts, state: TrainState, ckpt: dict[str, Any]) -> None:
    """Continue from latest.pt: weights, optimizer, schedule, stopping rules, counters, RNG."""
    parts.policy.load_state_dict(ckpt_io.weights_with_normalizer(ckpt["policy"], ckpt))
    if parts.ema is not None and ckpt.get("ema_state"):
        parts.ema.load_state_dict({**ckpt["ema_state"],
                                   "averaged_model": ckpt_io.weights_with_normalizer(ckpt["ema"], ckpt)})
    parts.optimizer.load_state_dict(ckpt["optimizer"])
    parts.lr_schedule.load_state_dict(ckpt["lr_schedule"])
    trainer = ckpt["trainer"]
    parts.stopper.load_state_dict(trainer["stopper"])
    parts.divergence.load_state_dict(trainer["divergence"])
    parts.topk.load_state_dict(trainer["topk"], upto_epoch=ckpt["epoch"])
    parts.clock.spent_s = trainer.get("train_s", 0.0)
    state.load_state_dict(ckpt, trainer["elapsed_s"], parts.train_loader.batch_size)
