"""One trial: config -> train -> rollouts -> checkpoints, logs, summary -> result stores.

A single loop (``train_loop``); every variant (objective, mask, size, warm start, resume) is
config. Per epoch: train over shuffled windows, validation loss, and every ``rollout_every``
epochs (and at the last) a rollout of the EMA policy in the simulator. The log line is
written before the checkpoint, so a crash between the two only repeats an epoch on
``--resume``, never loses one.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from imf import registry
from imf.atomic import clean_stale_temps
from imf.config import MAX_TRAIN_CAP, Config
from imf.data import check_data_size
from imf.errors import DiskFullError, TrainingError
from imf.registry import fill_options
from imf.clock import now_iso
from imf.store import BEST, LATEST, Checkpoints, RunLayout, RunLock, RunSummary, checkpoint_name, params_of
from imf.train import checkpoint as ckpt_io
from imf.train.curriculum import check_curriculum
from imf.train.data import data_counts
from imf.train.console import EpochBar, epoch_line, progress_text, rollout_status, shown
from imf.train.evaluate import rollout_metrics
from imf.train.memory import is_out_of_memory, out_of_memory_error
from imf.train.parts import TrainParts, build_parts, check_warm_start, pick_device
from imf.train.recording import (Identity, archive_earlier, check_before_run, identity_of, new_run_uid, record,
                                 store_names, store_root)
from imf.train.runfiles import JsonLinesLog, ProgressFile, Tee
from imf.train.state import TrainState, checkpoint_of, restore, save_epoch
from imf.train.step import accumulate_gradients, batch_size_of, to_device
from imf.train.stopping import StepMetrics, StopSignals
from imf.trackers import RunLogger, check_trackers, run_group
from imf.version import code_version


@dataclass
class TrialOptions:
    trial_id: str
    run_dir: Path
    init_from: Path | None = None
    note: str = ""
    overrides: list[str] = field(default_factory=list)
    stores: list[str] | None = None  # None: cfg.logging.stores; ["none"]: record nowhere
    store_root: Path | None = None  # None: the run folder's parent (or the project above it)
    resume: bool = False
    hypothesis: str | None = None  # the iteration log's block (H3) this trial tests
    run_uid: str | None = None  # a resume's attempt token (None: a new attempt)
    identity: Identity | None = None  # the hashes, when the caller made them (imf trial's default id)


@dataclass
class Trial:
    """What one run is (config, options, folder) and where it reports (log, console, tracker)."""

    cfg: Config
    opts: TrialOptions
    files: RunLayout
    log: JsonLinesLog
    say: Callable[[str], None]
    tracker: RunLogger
    stop: StopSignals = field(default_factory=StopSignals)  # SIGTERM / SIGINT received
    cfg_dict: dict[str, Any] = field(default_factory=dict)  # the config, serialised once
    started: str = field(default_factory=now_iso)
    data: dict[str, int] | None = None  # summary.json's data counts, once the data set is open
    identity: Identity | None = None
    stores: list[str] = field(default_factory=list)
    run_uid: str = ""
    progress: ProgressFile | None = None


def run_trial(cfg: Config, opts: TrialOptions) -> dict[str, Any]:
    """Train, score and record one trial; returns its summary.json contents."""
    stores = store_names(opts.stores, cfg.logging.stores)
    fill_options(cfg)  # the plugins' own options, checked; config.yaml records them in full
    check_trackers(cfg)  # a missing tracker or its package: one line, before the folder is made
    for store in stores:  # bad names fail before anything is written or trained
        registry.check("imf.stores", store)
    device = pick_device(cfg.training.device)  # these fail before the run folder changes
    warm = _warm_start(cfg, opts)
    check_data_size(cfg.data, MAX_TRAIN_CAP)
    check_curriculum(cfg)
    identity = opts.identity or identity_of(cfg, opts.init_from)  # a warm start's checkpoint is read once
    root = store_root(opts.run_dir, opts.store_root)
    if not opts.resume:
        check_before_run(root, stores, opts.trial_id, identity, opts.hypothesis)
    files = RunLayout(opts.run_dir)
    # The folder is this process's until it returns: a second trial, a --resume or a final
    # eval into it is refused while we live (imf/store/runlock.py).
    with RunLock.acquire(files.root, opts.trial_id), StopSignals() as stop:
        out = Tee(files.stdout) if not _stdout_is(files.stdout) else None
        say = out.line if out else _print
        resume_ckpt = _prepare_folder(cfg, opts, files, lambda: archive_earlier(files, root, stores, say))
        trial = Trial(cfg, opts, files, JsonLinesLog(files.logs), say, RunLogger(say), stop, cfg.to_dict(),
                      identity=identity, stores=stores, run_uid=opts.run_uid or new_run_uid(),
                      progress=ProgressFile(files.progress))
        state = TrainState()
        try:
            topk = _train_and_score(trial, state, device, resume_ckpt, warm)
            summary = _write_summary(trial, state, topk, finished=True)
            if state.status != "interrupted" and stores:  # an interrupted run is resumed, not recorded
                record(root, stores, summary, files.root)
                say(f"recorded in {', '.join(stores)} under {root}")
            say(f"trial {opts.trial_id}: {state.status}"
                + (_interrupted_hint(state, files) if state.status == "interrupted" else "")
                + (f", best test_mean_score {state.best[0]:.4f} at epoch {shown(state.best[1])}" if state.best else "")
                + f" ({files.root})")
            return summary.to_dict()
        finally:
            if out:
                out.close()


def _warm_start(cfg: Config, opts: TrialOptions) -> tuple[Path, dict[str, Any]] | None:
    """``--init-from``'s path and checkpoint, loaded and checked against this run's policy; a
    resume has its own weights."""
    if opts.init_from is None or opts.resume:
        return None
    init = ckpt_io.load_checkpoint(opts.init_from)
    ckpt_io.check_compatible(init, cfg.policy, opts.init_from)
    check_warm_start(cfg, init, opts.init_from)
    return opts.init_from, init


def _prepare_folder(cfg: Config, opts: TrialOptions, files: RunLayout,
                    archive: Callable[[], None]) -> dict[str, Any] | None:
    """A resume's latest.pt (read before any file changes), or a fresh folder: an earlier
    attempt's files are moved to attempts/N (``archive``), never lost."""
    if opts.resume:
        if not files.latest.exists():
            raise TrainingError(f"--resume: {files.latest} does not exist")
        return ckpt_io.load_checkpoint(files.latest)
    files.root.mkdir(parents=True, exist_ok=True)
    archive()
    cfg.save(files.config)
    return None


def _train_and_score(trial: Trial, state: TrainState, device: torch.device, resume_ckpt: dict[str, Any] | None,
                     warm: tuple[Path, dict[str, Any]] | None) -> ckpt_io.TopK | None:
    """Build the parts, restore a resume, run the loop; a failure is recorded as one."""
    cfg, opts = trial.cfg, trial.opts
    restored = resume_ckpt is None  # a resume that fails to load keeps the run's summary
    parts = None
    try:
        parts = build_parts(cfg, trial.files, device, warm, trial.say, opts.trial_id)
        trial.data = data_counts(cfg, parts.train_loader.dataset)
        for folder in (trial.files.root, trial.files.checkpoints):
            clean_stale_temps(folder)  # temps of a killed earlier attempt
        if resume_ckpt is not None:
            restore(parts, state, resume_ckpt)
            restored = True
            dropped = trial.log.truncate_after(resume_ckpt["epoch"])
            trial.say(f"resume: continuing at epoch {state.epoch + 1} from latest.pt"
                      + (f" (dropped {dropped} log lines written after it)" if dropped else ""))
        _write_summary(trial, state, parts.topk, finished=False)
        trial.tracker.start(cfg, opts.trial_id, trial.files.root, run_group(cfg, opts.overrides),
                            run_uid=trial.run_uid, resume=opts.resume)  # a resume continues its tracker run
        train_loop(trial, parts, state)
        return parts.topk
    except BaseException as exc:
        out_of_memory = out_of_memory_error(cfg, device) if is_out_of_memory(exc) else None
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C twice: stopped at once
            state.status, state.reason = "interrupted", "SIGINT"
        else:
            state.status, state.reason = "failed", str(out_of_memory or f"{type(exc).__name__}: {exc}")
        if restored:
            try:
                _write_summary(trial, state, parts.topk if parts else None, finished=True)
            except DiskFullError:
                pass  # no room even for the summary: readers see a "running" run with no owner
        if out_of_memory is not None:
            raise out_of_memory from None
        raise
    finally:
        trial.tracker.finish()


# ------------------------------------------------------------------ the loop

def train_loop(trial: Trial, parts: TrainParts, state: TrainState) -> None:
    """Epochs until the last, a divergence, early stopping or the time budget."""
    t = trial.cfg.training
    while state.epoch < t.num_epochs:
        epoch, before = state.epoch, (state.global_step, state.samples)
        train = train_epoch(trial.cfg, parts, state, trial.stop, trial.progress)
        if trial.stop():  # the part-epoch is dropped: a resume redoes it from latest.pt
            state.global_step, state.samples = before
            _interrupted(trial, state)
            return
        if train is None:
            trial.log.append({"epoch": epoch, "global_step": state.global_step, "samples": state.samples,
                              "diverged": True, "reason": state.reason})
            trial.say(f"epoch {shown(epoch)}: diverged: {state.reason}; " + _last_good(trial.files))
            return
        record = {"epoch": epoch, "global_step": state.global_step, "samples": state.samples, **train,
                  **validate(trial.cfg, parts, state), "lr": parts.lr_schedule.get_last_lr()[0]}
        stop = False
        out_of_time = parts.clock.exhausted()
        if (epoch + 1) % t.rollout_every == 0 or epoch == t.num_epochs - 1 or out_of_time:
            stop = rollout(trial.cfg, parts, state, record)
        record["elapsed_s"] = round(state.elapsed(), 2)
        record["train_s"] = round(parts.clock.seconds(), 2)
        trial.log.append(record)
        trial.tracker.log({k: v for k, v in record.items() if k != "test_per_seed"}, state.global_step)
        state.epoch = epoch + 1
        # latest.pt every checkpoint_every epochs, at rollouts (best and top-k copy it) and at
        # the last epoch; a resume redoes the epochs after it.
        snapshot = t.snapshot_every > 0 and (epoch + 1) % t.snapshot_every == 0
        if (epoch + 1) % t.checkpoint_every == 0 or "test_mean_score" in record or snapshot \
                or epoch == t.num_epochs - 1 or trial.stop():
            save_epoch(checkpoint_of(trial.cfg_dict, parts, state, record, trial.opts.trial_id),
                       parts, record, snapshot)
        _write_summary(trial, state, parts.topk, finished=False)
        trial.say(epoch_line(record, t.num_epochs, t.time_budget_s, t.budget_clock))
        if trial.stop():  # the epoch is complete and in latest.pt
            _interrupted(trial, state)
            return
        if stop:
            state.status = "stopped_early"
            trial.say(f"early stop: {t.patience} rollouts without a new best")
            return
        if out_of_time:
            trial.say(f"time budget: {t.time_budget_s:g} s of training ({t.budget_clock} clock) used")
            break
    state.status = "completed"


def _last_good(files: RunLayout) -> str:
    """What a diverged run keeps: its latest.pt from before the divergence, if it wrote one."""
    if files.latest.exists():
        return f"{files.latest} holds the last good state (the epochs before this one)"
    return "no checkpoint was written before it"


def _interrupted_hint(state: TrainState, files: RunLayout) -> str:
    if files.latest.exists():
        return f" by {state.reason}; continue with imf trial --resume --out {files.root}"
    return f" by {state.reason} before its first checkpoint; run it again (there is nothing to resume)"


def _interrupted(trial: Trial, state: TrainState) -> None:
    state.status, state.reason = "interrupted", trial.stop.received or "signal"
    trial.say(f"{state.reason}: stopped after {state.epoch} complete epoch(s); latest.pt is the "
              "last complete one")


def train_epoch(cfg: Config, parts: TrainParts, state: TrainState, stop: Callable[[], bool] = lambda: False,
                progress: ProgressFile | None = None) -> dict[str, float] | None:
    """One epoch of steps (fewer when ``stop`` says so); the mean loss and objective metrics,
    or None when it diverged."""
    parts.policy.train()
    parts.shuffle.manual_seed(cfg.training.seed * 1_000_003 + state.epoch)  # same order on resume
    pool = parts.curriculum.start_epoch(state.epoch, parts.clock.seconds())
    t = cfg.training
    label = progress_text(state.epoch, t.num_epochs, t.time_budget_s, t.budget_clock, parts.clock.seconds())
    loader, steps = parts.epoch_batches(state.samples)
    bar = EpochBar(label, steps) if sys.stdout.isatty() else None
    window = StepMetrics(cfg.logging.every_steps)  # no host sync inside a step
    if progress is not None:
        progress.begin(state.epoch, steps)
    parts.clock.start()
    try:
        for i, batch in enumerate(loader):
            if i >= steps or parts.clock.exhausted() or stop():
                break
            parts.optimizer.zero_grad(set_to_none=True)
            loss, metrics = accumulate_gradients(parts.policy, to_device(batch, parts.device),
                                                 cfg.training.grad_accum, parts.device, parts.autocast)
            torch.nn.utils.clip_grad_norm_(parts.policy.parameters(), cfg.training.grad_clip)
            parts.optimizer.step()
            parts.lr_schedule.step()
            if parts.ema is not None:
                parts.ema.step(parts.policy)
            state.global_step += 1
            state.samples += batch_size_of(batch)
            if progress is not None:
                progress.tick(i + 1)
            value = metrics.get("loss", loss)
            if window.add(value if isinstance(value, torch.Tensor) else loss, metrics) \
                    and _diverged(window, parts, state, bar):
                return None
        if _diverged(window, parts, state, bar):
            return None
    finally:
        parts.clock.stop()
        if bar is not None:
            bar.close()
    n = len(window.losses)
    means = {f"train_{k}": v / n for k, v in window.sums.items() if k != "loss"}
    episodes = {"train_episodes": pool} if parts.curriculum.active else {}
    return {"train_loss": float(np.mean(window.losses)) if n else None, **means, **episodes}


def _diverged(window: StepMetrics, parts: TrainParts, state: TrainState, bar: EpochBar | None) -> bool:
    """Read the window's losses (one sync) into the divergence check; True when one diverged,
    which names its step (the steps after it in the window already ran: latest.pt is the last
    good state)."""
    losses = window.flush()
    for value in losses:
        if parts.divergence.update(value):
            state.status, state.reason = "diverged", parts.divergence.reason or "loss diverged"
            return True
    if bar is not None and losses:
        bar.step(losses[-1], len(losses))
    return False


@torch.no_grad()
def validate(cfg: Config, parts: TrainParts, state: TrainState) -> dict[str, float | None]:
    """Validation loss and mse with fixed noise, so epochs compare fairly, and the action
    error on the fixed probe windows."""
    if parts.val_loader is None:
        return {"val_loss": None}
    policy = parts.policy
    policy.eval()
    gen = torch.Generator(device=parts.device).manual_seed(cfg.training.seed)
    losses, mses = [], []
    limit = cfg.training.max_val_steps or len(parts.val_loader)
    for i, batch in enumerate(parts.val_loader):
        if i >= limit:
            break
        loss, metrics = policy.compute_loss(to_device(batch, parts.device), generator=gen)
        losses.append(float(loss))
        if "mse" in metrics:
            mses.append(float(metrics["mse"]))
    out: dict[str, float | None] = {"val_loss": float(np.mean(losses)) if losses else None}
    if mses:
        out["val_mse"] = float(np.mean(mses))
    out.update(parts.probe.measure(policy, parts.device))
    if not state.hold_still_logged and len(parts.probe):
        out["val_hold_still_rmse"] = parts.probe.hold_still
        state.hold_still_logged = True
    policy.train()
    return out


def rollout(cfg: Config, parts: TrainParts, state: TrainState, record: dict[str, Any]) -> bool:
    """Score the EMA policy into ``record``; True when early stopping says stop."""
    with rollout_status(record["epoch"], cfg.eval.n_test, sys.stdout.isatty()):
        metrics = rollout_metrics(parts.scored_policy, cfg, parts.device)
    record.update(metrics)
    score = metrics["test_mean_score"]
    state.last_score = score
    if state.best is None or score > state.best[0]:
        state.best = (score, record["epoch"])
        state.best_success = metrics["test_success_rate"]
        record["new_best"] = True
    return parts.stopper.update(score)


# ------------------------------------------------------------------ summary and stores

def _write_summary(trial: Trial, state: TrainState, topk: ckpt_io.TopK | None, finished: bool) -> RunSummary:
    cfg, opts, files = trial.cfg, trial.opts, trial.files
    summary = RunSummary(
        id=opts.trial_id, status=state.status, reason=state.reason, epochs_done=state.epoch,
        num_epochs=cfg.training.num_epochs, global_step=state.global_step,
        best_score=state.best[0] if state.best else None,
        best_epoch=state.best[1] if state.best else None, last_score=state.last_score,
        best_success_rate=state.best_success, elapsed_s=round(state.elapsed(), 2),
        warm_started=opts.init_from is not None,
        init_from=str(opts.init_from) if opts.init_from else None,
        overrides=list(opts.overrides), note=opts.note, seed=cfg.training.seed,
        params=params_of(cfg),
        checkpoints=Checkpoints(
            latest=checkpoint_name(LATEST) if files.latest.exists() else None,
            best=checkpoint_name(BEST) if files.best.exists() else None,
            topk=[checkpoint_name(n) for n in topk.names()] if topk else []),
        started=trial.started, finished=now_iso() if finished else None,
        code_version=code_version(), data=trial.data,
        config_hash=trial.identity.config_hash if trial.identity else None,
        cell=trial.identity.cell if trial.identity else None,
        init_hash=trial.identity.init_hash if trial.identity else None,
        run_uid=trial.run_uid or None, hypothesis=opts.hypothesis, stores=list(trial.stores))
    summary.write(files.root)
    return summary


def _print(text: str) -> None:
    print(text, flush=True)


def _stdout_is(path: Path) -> bool:
    """True when our stdout already goes to ``path`` (a scheduler redirected it)."""
    try:
        return path.exists() and os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(path))
    except (OSError, ValueError, AttributeError):
        return False
