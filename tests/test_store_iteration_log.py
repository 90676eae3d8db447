"""The iteration-log store: trial lines and hypothesis blocks in ITERATION_LOG.md."""
from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from imf import registry
from imf.errors import StoreError
from imf.store.iteration_log import IterationLogStore, find_blocks


def _writer(root: str, proc: int) -> None:
    store = IterationLogStore(Path(root))
    for i in range(10):
        store.record({"id": f"p{proc}-t{i}", "score": i / 10, "status": "completed"})


def test_plugin_is_found_by_entry_point():
    assert registry.get("imf.stores", "iteration-log") is IterationLogStore


def test_trial_lines_are_upserted_with_change_against_best(tmp_path):
    store = IterationLogStore(tmp_path)
    store.record({"id": "a", "score": 0.5, "status": "completed", "note": "base | line"})
    store.record({"id": "b", "score": 0.75, "status": "completed"})
    store.record({"id": "c", "score": None, "status": "failed", "note": "oom\nat epoch 3"})
    store.record({"id": "d", "score": 0.6, "status": "stopped_early"})
    store.record({"id": "a", "score": 0.55, "status": "completed", "note": "rerun"})
    trials = store.read()
    assert [t["id"] for t in trials] == ["a", "b", "c", "d"]
    by_id = {t["id"]: t for t in trials}
    assert by_id["a"]["score"] == 0.55 and by_id["a"]["note"] == "rerun"
    assert by_id["a"]["change"] == "-0.2000 vs best 0.7500"
    assert by_id["b"]["change"] == "+0.2500 vs best 0.5000 (new best)"
    assert by_id["c"] == {**by_id["c"], "score": None, "change": "no score",
                          "status": "failed", "note": "oom at epoch 3"}
    assert by_id["d"]["change"] == "-0.1500 vs best 0.7500"
    text = (tmp_path / "ITERATION_LOG.md").read_text()
    assert text.startswith("# Iteration log\n")
    assert text.count("trial `a`") == 1


@pytest.mark.slow
def test_first_score_and_concurrent_writers(tmp_path):
    store = IterationLogStore(tmp_path)
    store.record({"id": "x", "score": 0.1})
    assert store.read()[0]["change"] == "first score"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), p)) for p in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0] * 4
    ids = [t["id"] for t in store.read()]
    assert len(ids) == 41 == len(set(ids))


def test_hypothesis_blocks_round_trip(tmp_path):
    store = IterationLogStore(tmp_path)
    assert store.add_hypothesis("width helps\nmore than depth", "+0.05", "imf sweep `x`") == "H1"
    store.record({"id": "t1", "score": 0.4})
    assert store.add_hypothesis("depth helps", "+0.01") == "H2"
    done = store.conclude("h1", "0.82 at n_emb 384", "confirmed")
    assert done["result"] == "0.82 at n_emb 384"
    blocks = store.hypotheses()
    assert blocks[0] == {"id": "H1", "time": blocks[0]["time"],
                         "hypothesis": "width helps\nmore than depth", "expectation": "+0.05",
                         "command": "imf sweep `x`", "result": "0.82 at n_emb 384",
                         "conclusion": "confirmed"}
    assert blocks[1]["command"] is None and blocks[1]["result"] is None
    assert [t["id"] for t in store.read()] == ["t1"]
    text = (tmp_path / "ITERATION_LOG.md").read_text()
    assert "- **Result:** 0.82 at n_emb 384" in text and "- **Conclusion:** (pending)" in text
    assert "\n\n- " in text  # the trial line is not glued to the H1 list


def test_hand_edits_are_kept(tmp_path):
    path = tmp_path / "ITERATION_LOG.md"
    path.write_text("# My notes\n\nfree text here\n\n### H4\n- **Hypothesis:** old\n")
    store = IterationLogStore(tmp_path)
    assert store.add_hypothesis("new", "x") == "H5"
    store.conclude("4", "r", "c")
    text = path.read_text()
    assert text.startswith("# My notes\n\nfree text here\n")
    assert [b["id"] for _, _, b in find_blocks(text.splitlines())] == ["H4", "H5"]
    assert store.hypotheses()[0]["expectation"] is None


def test_conclude_unknown_or_bad_id_is_a_clear_error(tmp_path):
    store = IterationLogStore(tmp_path)
    store.add_hypothesis("a", "b")
    before = (tmp_path / "ITERATION_LOG.md").read_bytes()
    with pytest.raises(StoreError, match=r"no hypothesis H9 in .*ITERATION_LOG.md; ids: H1"):
        store.conclude("H9", "r", "c")
    with pytest.raises(StoreError, match="not valid"):
        store.conclude("X1", "r", "c")
    with pytest.raises(StoreError, match="--result must not be empty"):
        store.conclude("H1", " ", "c")
    with pytest.raises(StoreError, match="--text must not be empty"):
        store.add_hypothesis("", "b")
    assert (tmp_path / "ITERATION_LOG.md").read_bytes() == before
