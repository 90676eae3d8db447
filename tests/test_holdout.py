"""Three seed ranges with one job each (test: choose a checkpoint; selection: choose between
runs; holdout: claims), and the holdout's record of every look (holdout.json)."""
from __future__ import annotations

import json

import pytest

from imf.config import load_config
from imf.config.eval_seeds import final_eval_seeds, holdout_seeds
from imf.seeds import HOLDOUT, SELECTION
from imf.errors import ConfigError
from imf.pusht.expert import DEMO_SEED_BASE
from imf.store.holdout import append_look, read_looks
from imf_process import run_imf
from test_final_eval import TINY


def _span(first: int, count: int) -> range:
    return range(first, first + count)


@pytest.mark.parametrize("preset", ["smoke", "pusht_lowdim_cpu", "pusht_image_cpu", "pusht_image_imf"])
def test_test_train_and_selection_seeds_never_overlap_the_holdout(preset):
    ev = load_config(preset).eval
    holdout = set(_span(HOLDOUT.start, HOLDOUT.max_episodes))
    for used in (_span(ev.test_start_seed, ev.n_test), _span(ev.train_start_seed, ev.n_train),
                 _span(SELECTION.start, SELECTION.max_episodes)):
        assert not holdout & set(used)
    assert not set(_span(SELECTION.start, SELECTION.max_episodes)) & set(_span(ev.test_start_seed, ev.n_test))
    assert HOLDOUT.stop <= DEMO_SEED_BASE  # the demonstrations' episodes lie above every range
    assert holdout_seeds(HOLDOUT.max_episodes, ev)[-1] < DEMO_SEED_BASE
    assert final_eval_seeds(SELECTION.max_episodes, ev)[-1] < HOLDOUT.start


def test_a_config_whose_test_seeds_sit_in_the_holdout_is_refused():
    ev = load_config("smoke", ["eval.test_start_seed=900010"]).eval
    with pytest.raises(ConfigError, match=r"holdout seeds 900000\.\.900199 overlap the test rollout seeds"):
        holdout_seeds(200, ev)
    with pytest.raises(ConfigError, match="the number of holdout episodes must be an integer from 1 to 100000"):
        holdout_seeds(0, load_config("smoke").eval)


def _look(mean: float) -> dict:
    return {"time": "t", "checkpoint": "checkpoints/best.pt", "episodes": 2, "seed_start": 900000,
            "mean": mean, "se": 0.1, "success_rate": 0.0, "success_se": 0.0}


def test_looks_are_appended_and_an_unreadable_record_is_never_overwritten(tmp_path):
    assert read_looks(tmp_path).looks == []
    assert append_look(tmp_path, _look(0.5)) == 1
    assert append_look(tmp_path, _look(0.6)) == 2
    assert [look["mean"] for look in read_looks(tmp_path).looks] == [0.5, 0.6]
    (tmp_path / "holdout.json").write_text("{not json")
    with pytest.raises(ValueError, match="holdout.json is unreadable"):
        append_look(tmp_path, _look(0.7))
    assert (tmp_path / "holdout.json").read_text() == "{not json"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("holdout")
    run_dir = root / "run"
    proc = run_imf("trial", "smoke", *TINY, f"data.cache_dir={root / 'cache'}", "--out", str(run_dir),
                   "--store", "none", "--final-eval", "2", "--holdout")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return run_dir, proc


@pytest.mark.slow
def test_imf_trial_holdout_looks_once_after_the_selection_seeds(tiny_run):
    run_dir, proc = tiny_run
    looks = read_looks(run_dir).looks
    assert len(looks) == 1 and looks[0]["seed_start"] == HOLDOUT.start and looks[0]["episodes"] == 2
    assert looks[0]["checkpoint"] == "checkpoints/best.pt"
    assert json.loads((run_dir / "final_eval.json").read_text())["seed_start"] == SELECTION.start
    assert "look 1 recorded in" in proc.stdout


@pytest.mark.slow
def test_two_looks_by_imf_eval_are_recorded_and_the_report_counts_them(tiny_run, tmp_path):
    run_dir, _ = tiny_run
    before = len(read_looks(run_dir).looks)
    for _ in range(2):
        proc = run_imf("eval", str(run_dir / "checkpoints" / "best.pt"), "--holdout", "--n-test", "2",
                       "--device", "cpu")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "holdout: mean" in proc.stdout
    looks = read_looks(run_dir).looks
    assert len(looks) == before + 2
    assert all(look["seed_start"] == 900000 and len(look["per_seed"]) == 2 for look in looks)
    assert looks[-1]["mean"] == pytest.approx(sum(looks[-1]["per_seed"]) / 2)
    report = run_imf("report", str(run_dir), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr[-2000:]
    text = (tmp_path / "report" / "report.md").read_text()
    assert "holdout" in text and f"ep, {before + 2} looks)" in text


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--holdout", "--n-test", "0"], "--holdout --n-test 0: the number of holdout episodes must be an integer from 1"),
    (["--holdout", "--start-seed", "5"], "--holdout scores on the holdout seeds with the checkpoint's own settings; drop --start-seed"),
])
def test_bad_holdout_evals_are_one_line_and_record_nothing(tiny_run, args, words):
    run_dir, _ = tiny_run
    before = (run_dir / "holdout.json").read_text()
    proc = run_imf("eval", str(run_dir / "checkpoints" / "best.pt"), *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], lines
    assert (run_dir / "holdout.json").read_text() == before


@pytest.mark.slow
def test_trial_holdout_without_final_eval_is_refused_before_training(tmp_path):
    proc = run_imf("trial", "smoke", "--out", str(tmp_path / "run"), "--store", "none", "--holdout")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "add --final-eval N" in lines[0], lines
    assert not (tmp_path / "run").exists()
