"""RunSummary: summary.json's one typed shape, and the run folder's layout."""
from __future__ import annotations

import json

from imf.config import load_config
from imf.store.layout import RunLayout, topk_epoch_score, topk_name
from imf.store.summary import SUMMARY_VERSION, Checkpoints, RunSummary, params_of, read_summary

# A summary.json as imf wrote it before the schema had a version.
OLD = {"id": "s-full-e128-l6-s0", "status": "completed", "reason": "", "epochs_done": 3,
       "num_epochs": 3, "global_step": 48, "best_score": 0.25, "best_epoch": 1, "last_score": 0.2,
       "best_success_rate": 0.0, "elapsed_s": 12.5, "warm_started": False, "init_from": None,
       "overrides": ["policy.n_emb=128"], "note": "", "seed": 0,
       "params": {"mask": "full", "n_emb": 128, "n_layer": 6, "n_head": 4, "objective": "imf"},
       "checkpoints": {"latest": "checkpoints/latest.pt", "best": "checkpoints/best.pt",
                       "topk": ["checkpoints/epoch=0001-test_mean_score=0.250.pt"]},
       "started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:01:00+00:00",
       "code_version": "0.1.0"}


def test_an_old_summary_without_a_version_reads_and_writes_back_the_same_fields(tmp_path):
    summary = RunSummary.from_dict(OLD)
    assert summary.best_epoch == 1 and summary.checkpoints.best == "checkpoints/best.pt"
    assert summary.to_dict() == {"version": SUMMARY_VERSION, **OLD}
    summary.write(tmp_path)
    assert read_summary(tmp_path) == summary
    assert json.loads((tmp_path / "summary.json").read_text())["version"] == SUMMARY_VERSION


def test_unknown_keys_are_kept_and_wrong_types_read_as_defaults():
    summary = RunSummary.from_dict({"id": "a", "best_score": True, "best_success_rate": "high",
                                    "epochs_done": 2.5, "elapsed_s": 3, "env": {"X": "1"},
                                    "checkpoints": "none"})
    assert (summary.best_score, summary.best_success_rate, summary.epochs_done) == (None, None, 0)
    assert summary.elapsed_s == 3.0 and isinstance(summary.elapsed_s, float)
    assert summary.checkpoints == Checkpoints() and summary.extra == {"env": {"X": "1"}}
    assert summary.to_dict()["env"] == {"X": "1"}


def test_a_missing_or_broken_summary_reads_as_none(tmp_path):
    assert read_summary(tmp_path) is None
    (tmp_path / "summary.json").write_text("[1, 2]")
    assert read_summary(tmp_path) is None


def test_an_earlier_attempt_moves_to_attempts_n(tmp_path):
    run = RunLayout(tmp_path)
    assert run.archive_attempt() is None
    run.logs.write_text("first\n")
    run.checkpoints.mkdir()
    run.stdout.write_text("kept: the trial appends to it\n")
    assert run.archive_attempt() == tmp_path / "attempts" / "1"
    run.logs.write_text("second\n")
    assert run.archive_attempt() == tmp_path / "attempts" / "2"
    assert (tmp_path / "attempts" / "1" / "logs.json.txt").read_text() == "first\n"
    assert (tmp_path / "attempts" / "1" / "checkpoints").is_dir() and run.stdout.exists()


def test_a_sweep_job_archives_every_file_of_the_earlier_attempt(tmp_path):
    run = RunLayout(tmp_path)
    assert run.archive_attempt(("stdout.log", "exit_code"), everything=True) is None
    for name in ("stdout.log", "exit_code", "pid"):
        (tmp_path / name).write_text(name)
    assert run.archive_attempt(("stdout.log", "exit_code"), everything=True) == tmp_path / "attempts" / "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attempts"]
    assert sorted(p.name for p in (tmp_path / "attempts" / "1").iterdir()) == ["exit_code", "pid", "stdout.log"]


def test_a_wrong_typed_score_is_a_store_error_never_a_missing_score(tmp_path):
    import pytest

    from imf.errors import StoreError
    from imf.store.base import record_from_summary
    good = {"id": "t1", "best_score": 0.5, "status": "completed"}
    assert record_from_summary(good, tmp_path)["score"] == 0.5
    with pytest.raises(StoreError, match="score must be a number or null, got '0.9'"):
        record_from_summary({**good, "best_score": "0.9"}, tmp_path)


def test_the_top_k_file_name_is_read_back_and_listed(tmp_path):
    name = topk_name(7, 0.8125)
    assert name == "epoch=0007-test_mean_score=0.812.pt" and topk_epoch_score(name) == (7, 0.812)
    layout = RunLayout(tmp_path)
    layout.checkpoints.mkdir()
    for file in (name, topk_name(2, 0.5), "latest.pt", "epoch=x-test_mean_score=1.pt"):
        (layout.checkpoints / file).write_bytes(b"")
    assert [(p.name, e, s) for p, e, s in layout.topk_files()] == [
        ("epoch=0002-test_mean_score=0.500.pt", 2, 0.5), (name, 7, 0.812)]


def test_params_are_built_from_a_config_or_its_dict():
    cfg = load_config("smoke", ["policy.n_emb=64"])
    assert params_of(cfg) == params_of(cfg.to_dict()) == {
        "mask": cfg.policy.mask, "n_emb": 64, "n_layer": cfg.policy.n_layer,
        "n_head": cfg.policy.n_head, "objective": cfg.objective.name}
    assert params_of({}) == dict.fromkeys(params_of(cfg))


def test_the_data_counts_are_written_when_known_and_read_back(tmp_path):
    counts = {"episodes": 40, "val_episodes": 8, "train_episodes": 10}
    summary = RunSummary.from_dict({**OLD, "data": counts})
    assert summary.data == counts and summary.to_dict()["data"] == counts
    summary.write(tmp_path)
    assert read_summary(tmp_path).data == counts
    assert RunSummary.from_dict({**OLD, "data": [1]}).data is None  # the wrong type reads as unknown
    assert "data" not in RunSummary.from_dict(OLD).to_dict()
