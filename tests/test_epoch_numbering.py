"""One epoch numbering for people: counted from 1 in the trial's output, ``imf status`` and
``imf report``; logs.json.txt and summary.json keep the 0-based ``epoch`` index."""
from __future__ import annotations

import json
import re

import pytest

from imf.report import build_report
from imf.scheduler.base import JobStatus
from imf.sweep.engine import Engine
from imf.sweep.folder import SweepDir
from imf.sweep.state import SweepState, TrialState
from imf.sweep.status import trial_row
from imf.train.console import epoch_line

TINY = ["training.max_train_steps=3", "training.batch_size=16", "eval.n_test=2", "eval.n_train=0",
        "eval.max_steps=16", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false",
        "logging.stores=none", "training.num_epochs=2", "training.rollout_every=1"]


def test_epoch_line_counts_from_one():
    line = epoch_line({"epoch": 0, "global_step": 3, "train_loss": 1.0, "val_loss": 2.0, "lr": 1e-4}, 2)
    assert line.startswith("epoch 1/2 step 3 ")


def _status_epoch(run_dir, tmp_path) -> str:
    """The epoch cell ``imf status`` shows after the controller has read the trial's log."""
    trial = TrialState("t", [], 0, 2, {}, 1.0, "local:cpu", state="running")
    engine = Engine(SweepDir(tmp_path / "sweep"), SweepState(name="s", config="smoke", trial_command=[], trials=[trial]))
    text = (run_dir / "logs.json.txt").read_text()
    engine.watcher.progress(trial, JobStatus("running", new_log=text, log_size=len(text)))
    return trial_row(trial, now=0.0)[3]


@pytest.mark.slow
def test_trial_status_and_report_agree(tmp_path):
    from imf.config import load_config
    from imf.pusht.expert import ensure_demo_dataset
    from imf.train.trial import TrialOptions, run_trial
    ensure_demo_dataset(4, seed=0, cache_dir=str(tmp_path / "cache"))
    cfg = load_config("smoke", TINY + [f"data.cache_dir={tmp_path / 'cache'}"])
    run_dir = tmp_path / "runs" / "t"
    summary = run_trial(cfg, TrialOptions(trial_id="t", run_dir=run_dir))
    printed = (run_dir / "stdout.log").read_text()
    assert re.findall(r"^epoch (\d+)/2 ", printed, re.M) == ["1", "2"]
    best_shown = int(re.search(r"best test_mean_score \S+ at epoch (\d+)", printed).group(1))
    logged = [json.loads(line)["epoch"] for line in (run_dir / "logs.json.txt").read_text().splitlines()]
    assert logged == [0, 1] and summary["best_epoch"] == best_shown - 1  # files: 0-based
    assert _status_epoch(run_dir, tmp_path) == "2/2"
    row = build_report([run_dir]).trials[0]
    assert (row.final_epoch, row.best_epoch) == (2, best_shown)


def test_the_sweep_counts_finished_epochs_not_the_diverged_marker(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rows = [{"epoch": 0, "global_step": 3, "train_loss": 1.0},
            {"epoch": 1, "global_step": 5, "diverged": True, "reason": "non-finite loss nan at step 5"}]
    half = json.dumps({"epoch": 2})[:7]  # a line still being written is not read yet
    (run_dir / "logs.json.txt").write_text("".join(json.dumps(r) + "\n" for r in rows) + half)
    assert _status_epoch(run_dir, tmp_path) == "1/2"


def test_the_report_counts_finished_epochs_not_the_diverged_marker(tmp_path):
    rows = [{"epoch": 0, "global_step": 3, "train_loss": 1.0, "test_mean_score": 0.2},
            {"epoch": 1, "global_step": 5, "diverged": True, "reason": "non-finite loss nan at step 5"}]
    (tmp_path / "logs.json.txt").write_text("".join(json.dumps(r) + "\n" for r in rows))
    row = build_report([tmp_path]).trials[0]
    assert (row.final_epoch, row.best_epoch, row.best_score) == (1, 1, 0.2)  # counted from 1
