"""One trial: config -> train -> rollouts -> checkpoints, logs, summary -> result stores.

A single loop; every variant (objective, mask, size, warm start, resume) is
config. Per epoch: train over shuffled windows, validation loss, and every
``rollout_every`` epochs (and at the last) a rollout of the EMA policy in the
simulator. The log line is written before the checkpoint, so a crash between
the two only repeats an epoch on ``--resume``, never loses one.
"""
from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

from imf import registry
from imf.config import Config
from imf.data.normalizer import MinMaxNormalizer
from imf.errors import ConfigError, TrainingError
from imf.model.ema import EMAModel
from imf.policy import ImfPolicy, load_weights_partial
from imf.store import record_from_summary
from imf.train import checkpoint as ckpt_io
from imf.train.data import build_datasets, make_loader
from imf.train.evaluate import rollout_metrics
from imf.train.precision import autocast_for, use_bf16
from imf.train.budget import TrainClock, cosine_with_warmup
from imf.train.console import EpochBar, epoch_line, rollout_status, shown
from imf.train.runfiles import CONFIG_NAME, LOG_NAME, STDOUT_NAME, JsonLinesLog, Tee, write_summary
from imf.train.state import restore_latest, save_epoch
from imf.train.stopping import DivergenceDetector, EarlyStopper
from imf.train.tracker import Tracker, run_group
from imf.train.validation import ActionProbe


@dataclass
class TrialOptions:
    trial_id: str
    run_dir: Path
    init_from: Path | None = None
    note: str = ""
    overrides: list[str] = field(default_factory=list)
    stores: list[str] | None = None  # None: cfg.logging.stores; ["none"]: record nowhere
    store_root: Path | None = None  # None: the run folder's parent
    resume: bool = False


def pick_device(spec: str) -> torch.device:
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise ConfigError(f"config key 'training.device': got {spec!r}, allowed: auto, cpu, cuda, cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise TrainingError(f"device {spec!r} requested but CUDA is not available here; use --device cpu")
    return device


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    return batch.to(device, non_blocking=True)


class Trial:
    def __init__(self, cfg: Config, opts: TrialOptions) -> None:
        self.cfg, self.opts = cfg, opts
        self.run_dir = opts.run_dir
        self.log = JsonLinesLog(self.run_dir / LOG_NAME)
        self.epoch = 0  # next epoch to run
        self.global_step = 0
        self.elapsed_before = 0.0  # time spent before a resume
        self.best: tuple[float, int] | None = None  # (score, epoch)
        self.best_success: float | None = None
        self.last_score: float | None = None
        self.status = "running"
        self.reason = ""
        self.started = _now()
        self.restored = not opts.resume  # False until a resume has loaded latest.pt

    # ------------------------------------------------------------ public

    def run(self) -> dict[str, Any]:
        self._check_plugins()  # bad names fail before anything is written or trained
        self._prepare_folder()
        self.out = Tee(self.run_dir / STDOUT_NAME) if not _stdout_is(self.run_dir / STDOUT_NAME) else None
        self.tracker = Tracker(self.say)
        self.t0 = time.time()
        try:
            self._train_and_score()
            summary = self._write_summary(finished=True)
            self._record(summary)
            self.say(f"trial {self.opts.trial_id}: {self.status}"
                     + (f", best test_mean_score {self.best[0]:.4f} at epoch {shown(self.best[1])}" if self.best else "")
                     + f" ({self.run_dir})")
            return summary
        finally:
            if self.out:
                self.out.close()

    def _train_and_score(self) -> None:
        try:
            self._setup()
            self.tracker.start(self.cfg, self.opts.trial_id, self.run_dir,
                               run_group(self.cfg, self.opts.overrides))
            self._loop()
        except BaseException as exc:
            self.status, self.reason = "failed", f"{type(exc).__name__}: {exc}"
            if self.restored:  # a resume that failed to load keeps the run's summary
                self._write_summary(finished=True)
            raise
        finally:
            self.tracker.finish()

    def say(self, text: str) -> None:
        if self.out:
            self.out.line(text)
        else:
            print(text, flush=True)

    # ------------------------------------------------------------ setup

    def _check_plugins(self) -> None:
        registry.check("imf.masks", self.cfg.policy.mask)
        registry.check("imf.objectives", self.cfg.objective.name)
        for store in self._store_names():
            registry.check("imf.stores", store)

    def _prepare_folder(self) -> None:
        """Start a new run folder; an earlier attempt's files are moved aside, never lost."""
        if self.opts.resume:  # a resume that cannot load latest.pt changes no file
            if not (self.run_dir / "checkpoints" / "latest.pt").exists():
                raise TrainingError(f"--resume: {self.run_dir}/checkpoints/latest.pt does not exist")
            self.resume_state = ckpt_io.load_checkpoint(self.run_dir / "checkpoints" / "latest.pt")
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        previous = [p for p in (LOG_NAME, "summary.json", "checkpoints", CONFIG_NAME, "swanlog")
                    if (self.run_dir / p).exists()]
        if previous:
            n = 1
            while (self.run_dir / "previous" / f"attempt-{n}").exists():
                n += 1
            aside = self.run_dir / "previous" / f"attempt-{n}"
            aside.mkdir(parents=True)
            for name in previous:
                (self.run_dir / name).rename(aside / name)
        self.cfg.save(self.run_dir / CONFIG_NAME)

    def _setup(self) -> None:
        cfg, t = self.cfg, self.cfg.training
        seed_everything(t.seed)
        self.device = pick_device(t.device)
        self.say(f"trial {self.opts.trial_id}: device {self.device}, run folder {self.run_dir}")
        train_ds, val_ds, normalizer, _ = build_datasets(cfg, self.say)
        warm = self.opts.init_from and not self.opts.resume  # a resume has its own weights
        init = ckpt_io.load_checkpoint(self.opts.init_from) if warm else None
        if init is not None:
            ckpt_io.check_compatible(init, cfg.policy, self.opts.init_from)
            # Keep the normaliser the weights were trained with, so outputs carry over exactly.
            normalizer = MinMaxNormalizer.from_state_dict(init["normalizer"])
        self.policy = ImfPolicy(cfg, normalizer).to(self.device)
        if init is not None:
            weights = init.get("ema") or init["policy"]
            report = load_weights_partial(self.policy, weights)
            self.say(ckpt_io.warm_start_line(report, self.opts.init_from))
        self.ema = EMAModel(self.policy, power=t.ema_power, max_value=t.ema_max) if t.use_ema else None
        self.optimizer = torch.optim.AdamW(self.policy.optimizer_groups(t), lr=t.lr, betas=tuple(t.betas))
        self.shuffle = torch.Generator()
        self.train_loader = make_loader(train_ds, cfg, shuffle=True, generator=self.shuffle)
        self.val_loader = make_loader(val_ds, cfg, shuffle=False, generator=None) if len(val_ds) else None
        p = cfg.policy
        self.probe = ActionProbe(val_ds, t.val_probe_windows, p.n_obs_steps, p.n_action_steps,
                                 t.batch_size, seed=t.seed)
        self.hold_still_logged = False
        if len(self.probe):
            self.say(f"validation: action RMSE on {len(self.probe)} fixed windows; holding still "
                     f"scores {self.probe.hold_still:.1f} (world units)")
        self.steps_per_epoch = min(len(self.train_loader), t.max_train_steps or len(self.train_loader))
        total = self.steps_per_epoch * t.num_epochs
        self.clock = TrainClock(t.budget_clock, t.time_budget_s)
        self.lr_schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, cosine_with_warmup(t.lr_warmup_steps, total, self.clock))
        self.topk = ckpt_io.TopK(self.run_dir / "checkpoints", t.checkpoint_topk)
        self.topk.folder.mkdir(parents=True, exist_ok=True)
        self.stopper = EarlyStopper(t.patience)
        self.divergence = DivergenceDetector(t.divergence_factor, t.divergence_warmup_steps)
        self.autocast = use_bf16(self.device, t.bf16)
        if self.opts.resume:
            restore_latest(self, self.resume_state)
            self.resume_state = None  # the optimizer and weights hold it now
            self.restored = True
            self.hold_still_logged = self.epoch > 0  # logged once, in the first epoch's line
        self._write_summary(finished=False)

    # ------------------------------------------------------------ the loop

    def _loop(self) -> None:
        t = self.cfg.training
        while self.epoch < t.num_epochs:
            epoch = self.epoch
            train = self._train_epoch(epoch)
            if train is None:
                self.log.append({"epoch": epoch, "global_step": self.global_step, "diverged": True,
                                 "reason": self.reason})
                self.say(f"epoch {shown(epoch)}: diverged: {self.reason}; kept the last good checkpoint")
                return
            record = {"epoch": epoch, "global_step": self.global_step, **train,
                      **self._validate(), "lr": self.lr_schedule.get_last_lr()[0]}
            stop = False
            out_of_time = self.clock.exhausted()
            if (epoch + 1) % t.rollout_every == 0 or epoch == t.num_epochs - 1 or out_of_time:
                stop = self._rollout(record)
            record["elapsed_s"] = round(self.elapsed(), 2)
            record["train_s"] = round(self.clock.seconds(), 2)
            self.log.append(record)
            self.tracker.log({k: v for k, v in record.items() if k != "test_per_seed"}, self.global_step)
            self.epoch = epoch + 1
            self._save(record)
            self.say(epoch_line(record, t.num_epochs))
            if stop:
                self.status = "stopped_early"
                self.say(f"early stop: {t.patience} rollouts without a new best")
                return
            if out_of_time:
                self.say(f"time budget: {t.time_budget_s:g} s of training ({t.budget_clock} clock) used")
                break
        self.status = "completed"

    def _train_epoch(self, epoch: int) -> dict[str, float] | None:
        """Train one epoch; the mean loss and objective metrics, or None when it diverged."""
        self.policy.train()
        self.shuffle.manual_seed(self.cfg.training.seed * 1_000_003 + epoch)  # same order on resume
        bar = EpochBar(epoch, self.cfg.training.num_epochs, self.steps_per_epoch) if sys.stdout.isatty() else None
        try:
            return self._train_steps(bar)
        finally:
            if bar is not None:
                bar.close()

    def _train_steps(self, bar: EpochBar | None) -> dict[str, float] | None:
        losses: list[float] = []
        sums: dict[str, float] = {}
        self.clock.start()
        for i, batch in enumerate(self.train_loader):
            if i >= self.steps_per_epoch or self.clock.exhausted():
                break
            batch = _to_device(batch, self.device)
            with autocast_for(self.device, self.autocast):
                loss, metrics = self.policy.compute_loss(batch)
            value = metrics["loss"] if "loss" in metrics else float(loss.detach())  # already synced
            if self.divergence.update(value):
                self.status, self.reason = "diverged", self.divergence.reason or "loss diverged"
                self.clock.stop()
                return None
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.training.grad_clip)
            self.optimizer.step()
            self.lr_schedule.step()
            if self.ema is not None:
                self.ema.step(self.policy)
            self.global_step += 1
            losses.append(value)
            for key, metric in metrics.items():
                sums[key] = sums.get(key, 0.0) + metric
            if bar is not None:
                bar.step(value)
        self.clock.stop()
        means = {f"train_{k}": v / len(losses) for k, v in sums.items() if k != "loss"}
        return {"train_loss": float(np.mean(losses)) if losses else None, **means}

    @torch.no_grad()
    def _validate(self) -> dict[str, float | None]:
        """Validation loss and mse with fixed noise, so epochs compare fairly, and the action
        error on the fixed probe windows."""
        if self.val_loader is None:
            return {"val_loss": None}
        self.policy.eval()
        gen = torch.Generator(device=self.device).manual_seed(self.cfg.training.seed)
        losses, mses = [], []
        limit = self.cfg.training.max_val_steps or len(self.val_loader)
        for i, batch in enumerate(self.val_loader):
            if i >= limit:
                break
            batch = _to_device(batch, self.device)
            loss, metrics = self.policy.compute_loss(batch, generator=gen)
            losses.append(float(loss))
            if "mse" in metrics:
                mses.append(metrics["mse"])
        out: dict[str, float | None] = {"val_loss": float(np.mean(losses)) if losses else None}
        if mses:
            out["val_mse"] = float(np.mean(mses))
        out.update(self.probe.measure(self.policy, self.device))
        if not self.hold_still_logged and len(self.probe):
            out["val_hold_still_rmse"] = self.probe.hold_still
            self.hold_still_logged = True
        self.policy.train()
        return out

    def _rollout(self, record: dict[str, Any]) -> bool:
        """Score the EMA policy; return True when early stopping says stop."""
        policy = self.ema.averaged_model if self.ema is not None else self.policy
        with rollout_status(record["epoch"], self.cfg.eval.n_test, sys.stdout.isatty()):
            metrics = rollout_metrics(policy, self.cfg, self.device)
        record.update(metrics)
        score = metrics["test_mean_score"]
        self.last_score = score
        if self.best is None or score > self.best[0]:
            self.best = (score, record["epoch"])
            self.best_success = metrics["test_success_rate"]
            record["new_best"] = True
        return self.stopper.update(score)

    # ------------------------------------------------------------ state

    def _save(self, record: dict[str, Any]) -> None:
        """latest.pt every ``checkpoint_every`` epochs, at rollouts (best and top-k copy it) and
        at the last epoch; a resume redoes the epochs after it."""
        t = self.cfg.training
        if ((record["epoch"] + 1) % t.checkpoint_every == 0 or "test_mean_score" in record
                or record["epoch"] == t.num_epochs - 1):
            save_epoch(self, record)
        self._write_summary(finished=False)

    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.t0

    def _write_summary(self, finished: bool) -> dict[str, Any]:
        p, folder = self.cfg.policy, self.run_dir / "checkpoints"
        summary = {
            "id": self.opts.trial_id, "status": self.status, "reason": self.reason,
            "epochs_done": self.epoch, "num_epochs": self.cfg.training.num_epochs,
            "global_step": self.global_step,
            "best_score": self.best[0] if self.best else None,
            "best_epoch": self.best[1] if self.best else None, "last_score": self.last_score,
            "best_success_rate": self.best_success, "elapsed_s": round(self.elapsed(), 2),
            "warm_started": self.opts.init_from is not None,
            "init_from": str(self.opts.init_from) if self.opts.init_from else None,
            "overrides": list(self.opts.overrides), "note": self.opts.note, "seed": self.cfg.training.seed,
            "params": {"mask": p.mask, "n_emb": p.n_emb, "n_layer": p.n_layer, "n_head": p.n_head,
                       "objective": self.cfg.objective.name},
            "checkpoints": {
                "latest": "checkpoints/latest.pt" if (folder / "latest.pt").exists() else None,
                "best": "checkpoints/best.pt" if (folder / "best.pt").exists() else None,
                "topk": [f"checkpoints/{n}" for n in getattr(self, "topk", None).names()]
                if hasattr(self, "topk") else []},
            "started": self.started, "finished": _now() if finished else None,
            "code_version": ckpt_io.code_version(),
        }
        write_summary(self.run_dir, summary)
        return summary

    def _store_names(self) -> list[str]:
        names = self.opts.stores if self.opts.stores is not None else self.cfg.logging.stores
        return [] if not names or names == ["none"] else list(names)

    def _record(self, summary: dict[str, Any]) -> None:
        names = self._store_names()
        if not names:
            return
        root = self.opts.store_root or self.run_dir.parent
        record = record_from_summary(summary, self.run_dir)
        for name in names:
            registry.get("imf.stores", name)(root).record(record)
        self.say(f"recorded in {', '.join(names)} under {root}")


def _stdout_is(path: Path) -> bool:
    """True when our stdout already goes to ``path`` (a scheduler redirected it)."""
    try:
        import os
        return path.exists() and os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(path))
    except (OSError, ValueError, AttributeError):
        return False


def run_trial(cfg: Config, opts: TrialOptions) -> dict[str, Any]:
    return Trial(cfg, opts).run()
