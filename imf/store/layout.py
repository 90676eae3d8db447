"""The run folder's layout: the one place that names the files a trial and its job leave.

```
<run>/config.yaml  logs.json.txt  stdout.log  summary.json  swanlog/  tensorboard/  wandb/
<run>/final_eval.json   best.pt on the selection seeds     holdout.json   every look at the holdout
<run>/checkpoints/latest.pt  best.pt  epoch=NNNN-test_mean_score=S.pt (the top-k files)
<run>/trial.lock    the live trial that owns the folder
<run>/progress.json the running epoch's step of its steps and rate (rewritten every few seconds)
<run>/pid  exit_code   the job wrapper's files (the job folder is the run folder)
<run>/attempts/N/   an earlier attempt's files, moved aside when the folder is used again
<sweep>/sweep.json  sweep.log  <trial-id>/   a sweep folder: its state, its log, one run folder per trial
```
The trial, the sweep's job wrapper (imf/scheduler/wrapper.py), the schedulers, the stores, the
report, suggest and the ensembles read these names from here; nothing else spells them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CONFIG = "config.yaml"
LOGS = "logs.json.txt"
STDOUT = "stdout.log"
SUMMARY = "summary.json"
SWANLOG = "swanlog"
TENSORBOARD = "tensorboard"  # the tensorboard tracker's event files
WANDB = "wandb"  # the wandb tracker's run
CHECKPOINTS = "checkpoints"
LATEST = "latest.pt"
BEST = "best.pt"
SNAPSHOTS = "snapshots"  # under checkpoints/: training.snapshot_every's kept copies of latest.pt
ATTEMPTS = "attempts"
FINAL_EVAL = "final_eval.json"  # the final checkpoint re-scored on the selection seeds (imf trial --final-eval)
HOLDOUT = "holdout.json"  # every look at the holdout seeds (imf eval --holdout), appended
PROGRESS = "progress.json"  # the running epoch's step, steps and rate (imf status reads it)
LOCK = "trial.lock"  # imf/store/runlock.py: the live trial that owns the folder
PID = "pid"  # the job wrapper's "PID STARTTIME TOKEN"
EXIT_CODE = "exit_code"  # the job wrapper's "CODE TOKEN"
SWEEP_STATE = "sweep.json"  # a sweep folder's plan and state (imf/sweep/folder.py)
SWEEP_LOG = "sweep.log"  # a sweep folder's master log
HYDRA_CONFIG = Path(".hydra") / "config.yaml"  # a Diffusion Policy run folder's config
# what one attempt of a trial writes: a rerun into the folder moves them all to attempts/N
TRIAL_FILES = (LOGS, SUMMARY, CHECKPOINTS, CONFIG, SWANLOG, TENSORBOARD, WANDB, FINAL_EVAL, HOLDOUT, PROGRESS)


ENSEMBLES = "ensembles"  # beside the runs (where their scoreboard is): imf ensemble's checkpoints
TOPK_GLOB = "epoch=*-test_mean_score=*.pt"
TOPK_FILE = re.compile(r"^epoch=(\d+)-test_mean_score=(-?\d+\.\d+)\.pt$")


def topk_name(epoch: int, score: float) -> str:
    """The file name of the top-k checkpoint of (0-based) ``epoch`` scoring ``score``."""
    return f"epoch={epoch:04d}-test_mean_score={score:.3f}.pt"


def topk_epoch_score(name: str) -> tuple[int, float] | None:
    """(0-based epoch, test_mean_score) a top-k checkpoint's file name carries, else None."""
    match = TOPK_FILE.match(Path(name).name)
    return (int(match[1]), float(match[2])) if match else None


def topk_files(checkpoints: Path) -> list[tuple[Path, int, float]]:
    """(path, 0-based epoch, score) of every top-k file in a ``checkpoints`` folder, by name."""
    found = []
    for path in sorted(Path(checkpoints).glob(TOPK_GLOB)):
        parsed = topk_epoch_score(path.name)
        if parsed is not None:
            found.append((path, *parsed))
    return found


def ensemble_id(source_name: str, top: int, mode: str) -> str:
    """The scoreboard id of ``imf ensemble SOURCE --top K --mode MODE``."""
    return f"{source_name}-top{top}-{mode}"


def run_dir_of(checkpoint: Path) -> Path:
    """The run folder a checkpoint belongs to: the folder above ``checkpoints/`` (or above
    ``checkpoints/snapshots/``), else its own."""
    folder = Path(checkpoint).parent
    if folder.name == SNAPSHOTS and folder.parent.name == CHECKPOINTS:
        folder = folder.parent
    return folder.parent if folder.name == CHECKPOINTS else folder


def checkpoint_name(name: str) -> str:
    """A checkpoint's path relative to the run folder, as summary.json gives it."""
    return f"{CHECKPOINTS}/{name}"


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run folder."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def logs(self) -> Path:
        return self.root / LOGS

    @property
    def stdout(self) -> Path:
        return self.root / STDOUT

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def checkpoints(self) -> Path:
        return self.root / CHECKPOINTS

    @property
    def latest(self) -> Path:
        return self.checkpoints / LATEST

    @property
    def best(self) -> Path:
        return self.checkpoints / BEST

    @property
    def final_eval(self) -> Path:
        return self.root / FINAL_EVAL

    @property
    def holdout(self) -> Path:
        return self.root / HOLDOUT

    @property
    def progress(self) -> Path:
        return self.root / PROGRESS

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    @property
    def pid(self) -> Path:
        return self.root / PID

    @property
    def exit_code(self) -> Path:
        return self.root / EXIT_CODE

    def topk_files(self) -> list[tuple[Path, int, float]]:
        return topk_files(self.checkpoints)

    def archive_attempt(self, when: tuple[str, ...] = TRIAL_FILES, everything: bool = False) -> Path | None:
        """Move an earlier attempt's files to ``attempts/N`` (the first free N) when any of
        ``when`` is there: those files, or with ``everything`` every entry but ``attempts`` (as a
        sweep's job does before it starts a trial again); None when there was nothing to move."""
        if not any((self.root / name).exists() for name in when):
            return None
        n = 1
        while (self.root / ATTEMPTS / str(n)).exists():
            n += 1
        aside = self.root / ATTEMPTS / str(n)
        aside.mkdir(parents=True)
        moving = [e.name for e in self.root.iterdir() if e.name != ATTEMPTS] if everything else when
        for name in moving:
            if (self.root / name).exists():
                (self.root / name).rename(aside / name)
        return aside
