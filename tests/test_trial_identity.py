"""Results that are never lost or misattributed: one id per config, attempts that keep their own
files and records, exit codes for every outcome, and no writes outside the named folders."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from imf_process import run_imf

from imf.store.scoreboard import ScoreboardStore

pytestmark = pytest.mark.slow  # trains real (tiny) trials

TINY = ["training.max_train_steps=2", "training.batch_size=8", "eval.n_test=1", "eval.n_train=0",
        "eval.max_steps=8", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false",
        "training.num_epochs=1"]


def trial(demo_cache: str, cwd: Path, *args: str):
    return run_imf("trial", "smoke", *TINY, f"data.cache_dir={demo_cache}", *args, cwd=cwd)


def board(folder: Path) -> list[dict]:
    """The scoreboard's records, paths absolute."""
    return ScoreboardStore(folder).read()


def one_error_line(out) -> str:
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: "), out.stderr
    return lines[0]


def test_two_trials_that_differ_in_learning_rate_keep_two_ids_and_two_records(demo_cache, tmp_path):
    first = trial(demo_cache, tmp_path, "--out", "runs/b/t1")
    second = trial(demo_cache, tmp_path, "training.lr=1e-3", "--out", "runs/b/t2")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    records = board(tmp_path / "runs" / "b")
    assert len(records) == 2 and len({r["id"] for r in records}) == 2
    assert {Path(r["run_dir"]).name for r in records} == {"t1", "t2"}
    assert all(r["config_hash"] and r["attempt"] == 1 for r in records)
    log = (tmp_path / "runs" / "b" / "ITERATION_LOG.md").read_text()
    assert all(f"`{r['id']}`" in log for r in records)
    best = json.loads((tmp_path / "runs" / "b" / "scoreboard.json").read_text())["best"]
    ranked = max(records, key=lambda r: r["score"])  # ties keep the earlier: the first recorded
    assert best["trial"] == ranked["id"] and (tmp_path / "runs" / "b" / best["checkpoint"]).resolve() == \
        Path(ranked["checkpoint"])


def test_an_id_reused_with_another_config_is_refused_before_its_folder_exists(demo_cache, tmp_path):
    assert trial(demo_cache, tmp_path, "--id", "mine", "--out", "runs/p/a").returncode == 0
    out = trial(demo_cache, tmp_path, "--id", "mine", "training.lr=1e-3", "--out", "runs/p/b")
    assert out.returncode == 2
    assert "'mine'" in one_error_line(out) and "another config" in out.stderr
    assert not (tmp_path / "runs" / "p" / "b").exists()
    assert len(board(tmp_path / "runs" / "p")) == 1


def test_the_same_config_again_is_a_second_attempt_never_a_silent_replacement(demo_cache, tmp_path):
    for out in ("runs/p/a", "runs/p/b"):
        assert trial(demo_cache, tmp_path, "--id", "same", "--out", out).returncode == 0
    records = board(tmp_path / "runs" / "p")
    assert [(r["id"], r["attempt"], Path(r["run_dir"]).name) for r in records] == \
        [("same", 1, "a"), ("same", 2, "b")]
    log = (tmp_path / "runs" / "p" / "ITERATION_LOG.md").read_text()
    assert "trial `same` |" in log and "trial `same` attempt 2 |" in log


def test_a_rerun_into_the_same_folder_moves_its_evaluations_and_records_with_it(demo_cache, tmp_path):
    run = tmp_path / "runs" / "r" / "x"
    done = trial(demo_cache, tmp_path, "--out", str(run), "--final-eval", "1")
    assert done.returncode == 0, done.stderr
    assert (run / "final_eval.json").is_file()
    again = trial(demo_cache, tmp_path, "--out", str(run), "--seed", "43")
    assert again.returncode == 0, again.stderr
    assert (run / "attempts" / "1" / "final_eval.json").is_file()
    assert not (run / "final_eval.json").exists()  # the new attempt has no evaluation of its own
    records = {r["seed"]: r for r in board(run.parent)}
    assert Path(records[42]["run_dir"]) == (run / "attempts" / "1").resolve()
    assert Path(records[42]["checkpoint"]).is_file() and Path(records[43]["run_dir"]) == run.resolve()


def test_a_diverged_trial_exits_3_and_says_what_it_kept(demo_cache, tmp_path):
    out = trial(demo_cache, tmp_path, "training.lr=1e6", "training.divergence_warmup_steps=0",
                "training.lr_warmup_steps=0", "--out", "runs/d/t")
    assert out.returncode == 3, out.stdout + out.stderr
    assert "diverged" in out.stdout and "no checkpoint was written before it" in out.stdout
    assert "kept the last good checkpoint" not in out.stdout
    assert board(tmp_path / "runs" / "d")[0]["status"] == "diverged"


def test_a_resume_of_a_run_recorded_nowhere_records_nowhere(demo_cache, tmp_path):
    run = tmp_path / "runs" / "n" / "t"
    first = trial(demo_cache, tmp_path, "training.num_epochs=2", "--store", "none", "--out", str(run))
    assert first.returncode == 0, first.stderr
    summary = json.loads((run / "summary.json").read_text())
    summary["status"], summary["finished"] = "interrupted", None  # as a killed run leaves it
    (run / "summary.json").write_text(json.dumps(summary))
    resumed = run_imf("trial", "--resume", "--out", str(run), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(p.name for p in run.parent.iterdir()) == ["t"]


def test_dry_run_prints_the_id_the_difference_and_the_size_and_writes_nothing(demo_cache, tmp_path):
    out = run_imf("trial", "smoke", "training.lr=1e-3", "--dry-run", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "training.lr: 0.0003 -> 0.001" in out.stdout and "parameters: " in out.stdout
    first = out.stdout.splitlines()[0]
    again = run_imf("trial", "smoke", "training.lr=1e-3", "--device", "cpu", "--dry-run", cwd=tmp_path)
    assert again.stdout.splitlines()[0] == first  # the device is not part of the trial
    other = run_imf("trial", "smoke", "training.lr=2e-3", "--dry-run", cwd=tmp_path)
    assert other.stdout.splitlines()[0] != first
    assert list(tmp_path.iterdir()) == []


def test_a_trial_run_for_a_hypothesis_is_cited_by_its_conclusion(demo_cache, tmp_path):
    project = tmp_path / "runs" / "h"
    refused = trial(demo_cache, tmp_path, "--hypothesis", "H1", "--out", str(project / "t"))
    assert refused.returncode == 2 and "no such block" in one_error_line(refused)
    assert not (project / "t").exists()
    added = run_imf("log", "hypothesis", "--text", "lr matters", "--expect", "+0.05", "--dir", str(project))
    assert added.returncode == 0 and added.stdout.strip() == "H1", added.stderr
    assert trial(demo_cache, tmp_path, "--hypothesis", "h1", "--out", str(project / "t")).returncode == 0
    (record,) = board(project)
    assert record["hypothesis"] == "H1"
    done = run_imf("log", "conclude", "H1", "--result", "same", "--conclusion", "no", "--dir", str(project))
    assert done.returncode == 0, done.stderr
    log = (project / "ITERATION_LOG.md").read_text()
    assert f"trials: {record['id']}" in log and f"`{record['id']}` for H1" in log
