"""The scoreboard store on real files, with real concurrent processes."""
from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from imf import registry
from imf.errors import StoreError
from imf.store import record_from_summary
from imf.store.scoreboard import ScoreboardStore

N_PROCS, N_RECORDS = 8, 50


def _writer(root: str, proc: int) -> None:
    store = ScoreboardStore(Path(root))
    for i in range(N_RECORDS):
        store.record({"id": f"p{proc}-t{i}", "score": (proc * N_RECORDS + i) / 1000,
                      "status": "completed", "epochs": i})


def test_plugin_is_found_by_entry_point():
    assert registry.get("imf.stores", "scoreboard") is ScoreboardStore


@pytest.mark.slow
def test_concurrent_processes_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), p)) for p in range(N_PROCS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0] * N_PROCS
    board = json.loads((tmp_path / "scoreboard.json").read_text())
    ids = [t["id"] for t in board["trials"]]
    assert len(ids) == N_PROCS * N_RECORDS == len(set(ids))
    top = N_PROCS * N_RECORDS - 1
    assert board["best"]["trial"] == f"p{N_PROCS - 1}-t{N_RECORDS - 1}"
    assert board["best"]["value"] == pytest.approx(top / 1000)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_upsert_replaces_and_recomputes_best(tmp_path):
    store = ScoreboardStore(tmp_path)
    store.record({"id": "a", "score": 0.9, "status": "running"})
    store.record({"id": "b", "score": 0.5})
    store.record({"id": "a", "score": 0.3, "status": "completed", "note": "resumed"})
    trials = store.read()
    assert [t["id"] for t in trials] == ["a", "b"]
    assert trials[0]["score"] == 0.3 and trials[0]["note"] == "resumed"
    assert store.best()["trial"] == "b"


def test_best_ignores_unscored_and_ties_keep_earlier(tmp_path):
    store = ScoreboardStore(tmp_path)
    store.record({"id": "none", "score": None, "status": "failed"})
    assert store.best() is None
    store.record({"id": "first", "score": 0.7, "checkpoint": "/x/best.pt",
                  "config": {"n_emb": 128}})
    store.record({"id": "second", "score": 0.7})
    store.record({"id": "nan", "score": float("nan"), "status": "diverged"})
    best = store.best()
    assert best == {"metric": "test_mean_score", "value": 0.7, "trial": "first", "attempt": 1,
                    "checkpoint": "/x/best.pt", "config": {"n_emb": 128},
                    "time": store.read()[1]["time"]}
    assert store.read()[3]["score"] is None
    json.loads((tmp_path / "scoreboard.json").read_text())  # strict JSON, no NaN


@pytest.mark.parametrize("content, what", [
    ('{"trials": [', "not valid JSON"),
    ("[]", "top level is a list"),
    ('{"trials": {"a": 1}}', "'trials' is missing or not a list"),
    ('{"trials": [{"score": 1}]}', "trials[0]"),
    ("", "not valid JSON"),
])
def test_corrupt_scoreboard_is_reported_and_left_untouched(tmp_path, content, what):
    path = tmp_path / "scoreboard.json"
    path.write_text(content)
    before = path.read_bytes()
    store = ScoreboardStore(tmp_path)
    with pytest.raises(StoreError) as err:
        store.record({"id": "x", "score": 0.5})
    assert str(path) in str(err.value) and what in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(StoreError):
        store.read()
    assert path.read_bytes() == before


@pytest.mark.parametrize("record, what", [
    ({"score": 0.1}, "trial id"),
    ({"id": ""}, "trial id"),
    ({"id": "a`b"}, "backticks"),
    ({"id": "a", "score": "high"}, "score must be a number"),
    ({"id": "a", "score": True}, "score must be a number"),
])
def test_bad_records_are_rejected_before_writing(tmp_path, record, what):
    with pytest.raises(StoreError, match=what):
        ScoreboardStore(tmp_path).record(record)
    assert not (tmp_path / "scoreboard.json").exists()


def test_record_from_summary_matches_the_interface(tmp_path):
    summary = {"id": "s-full-e128-l6-s0", "status": "stopped_early", "epochs_done": 40,
               "best_score": 0.81, "elapsed_s": 12.5, "warm_started": True,
               "overrides": ["policy.n_emb=128"], "note": "try", "finished": "2026-01-01T00:00:00",
               "params": {"mask": "full", "n_emb": 128, "n_layer": 6},
               "checkpoints": {"latest": "checkpoints/latest.pt", "best": "checkpoints/best.pt"}}
    record = record_from_summary(summary, tmp_path)
    assert record == {
        "id": "s-full-e128-l6-s0", "overrides": ["policy.n_emb=128"], "score": 0.81,
        "epochs": 40, "elapsed": 12.5, "warm_started": True, "diverged": False,
        "stopped_early": True, "status": "stopped_early", "note": "try",
        "time": "2026-01-01T00:00:00",
        "checkpoint": str((tmp_path / "checkpoints/best.pt").resolve()),
        "config": {"mask": "full", "n_emb": 128, "n_layer": 6},
        "run_dir": str(tmp_path.resolve()), "seed": None, "init_from": None, "init_hash": None,
        "config_hash": None, "cell": None, "run_uid": None, "hypothesis": None, "attempt": None}
    ScoreboardStore(tmp_path).record(record)
    assert ScoreboardStore(tmp_path).best()["checkpoint"] == record["checkpoint"]


def test_record_from_summary_without_id_names_the_file(tmp_path):
    with pytest.raises(StoreError, match="summary.json"):
        record_from_summary({"status": "completed"}, tmp_path)


def _sweep_with_best(root: Path) -> Path:
    run = root / "t1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"original")
    summary = {"id": "t1", "status": "completed", "best_score": 0.5,
               "checkpoints": {"best": "checkpoints/best.pt"}}
    ScoreboardStore(root).record(record_from_summary(summary, run))
    return run


def test_paths_are_stored_relative_and_a_moved_sweep_reads_its_own_files(tmp_path):
    import shutil
    _sweep_with_best(tmp_path / "orig")
    raw = json.loads((tmp_path / "orig" / "scoreboard.json").read_text())
    assert raw["trials"][0]["checkpoint"] == "t1/checkpoints/best.pt"
    assert raw["trials"][0]["run_dir"] == "t1" and raw["best"]["checkpoint"] == "t1/checkpoints/best.pt"
    shutil.copytree(tmp_path / "orig", tmp_path / "copy")
    copy = ScoreboardStore(tmp_path / "copy")
    want = (tmp_path / "copy" / "t1" / "checkpoints" / "best.pt").resolve()
    assert copy.best()["checkpoint"] == str(want)
    assert copy.read()[0]["run_dir"] == str((tmp_path / "copy" / "t1").resolve())
    assert copy.best_checkpoint() == want


def test_old_absolute_paths_are_read_under_the_folder_the_scoreboard_is_in(tmp_path):
    import shutil
    run = _sweep_with_best(tmp_path / "orig")
    path = tmp_path / "orig" / "scoreboard.json"
    board = json.loads(path.read_text())
    for entry in (board["best"], board["trials"][0]):  # as imf wrote them before
        entry["checkpoint"] = str((run / "checkpoints" / "best.pt").resolve())
    board["trials"][0]["run_dir"] = str(run.resolve())
    path.write_text(json.dumps(board))
    shutil.copytree(tmp_path / "orig", tmp_path / "copy")
    assert ScoreboardStore(tmp_path / "copy").best_checkpoint() == \
        (tmp_path / "copy" / "t1" / "checkpoints" / "best.pt").resolve()
    (tmp_path / "copy" / "t1" / "checkpoints" / "best.pt").unlink()
    with pytest.raises(StoreError, match="does not exist"):  # never the original's file
        ScoreboardStore(tmp_path / "copy").best_checkpoint()


def test_eval_best_scores_the_checkpoint_inside_the_given_folder(tmp_path):
    import shutil

    from imf.train.evaluate import best_checkpoint
    _sweep_with_best(tmp_path / "orig")
    shutil.copytree(tmp_path / "orig", tmp_path / "copy")
    assert best_checkpoint(tmp_path / "copy") == (tmp_path / "copy" / "t1/checkpoints/best.pt").resolve()
