"""build_report on real run folders: ranking, trends worked out by hand, tolerant reading."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _report_runs import make_dp_run, make_grid_sweep, make_run

from imf.errors import ReportError, StoreError
from imf.report import build_report
from imf.report.render import ranking_rows
from imf.store.runlock import RunLock


def test_ranking_and_per_trial_numbers(tmp_path):
    report = build_report([make_grid_sweep(tmp_path)])
    ranked = [(t.rank, t.id, t.best_score) for t in report.trials]
    assert ranked == [(1, "sw-full-e256-l12-s0", 0.90), (2, "sw-full-e256-l6-s0", 0.80),
                      (3, "sw-full-e128-l6-s0", 0.60), (4, "sw-full-e128-l12-s0", 0.50),
                      (5, "sw-full-e128-l6-s1", 0.40), (None, "sw-full-e256-l12-s1", None)]
    by_id = {t.id: t for t in report.trials}
    second = by_id["sw-full-e256-l6-s0"]
    assert (second.final_epoch, second.best_epoch, second.success_rate) == (4, 4, 0.40)  # from 1
    first = by_id["sw-full-e128-l6-s0"]
    assert (first.final_epoch, first.best_epoch, first.status) == (3, 2, "completed")
    assert by_id["sw-full-e256-l12-s0"].status == "diverged"
    # its summary says "running", but no live process owns its folder (trial.lock): it is gone
    assert by_id["sw-full-e256-l12-s1"].status == "interrupted"
    assert first.note == "note sw-full-e128-l6-s0" and first.source == "imf"


def test_a_run_is_reported_running_only_while_a_live_process_owns_its_folder(tmp_path):
    sweep = make_grid_sweep(tmp_path)
    with RunLock.acquire(sweep / "sw-full-e256-l12-s1", "sw-full-e256-l12-s1"):
        by_id = {t.id: t for t in build_report([sweep]).trials}
        assert by_id["sw-full-e256-l12-s1"].status == "running"


def test_trends_match_hand_computation(tmp_path):
    # every rollout has SE 0.05. Cells: 128x6 = seeds 0.60, 0.40 -> mean 0.5, sd 0.1414,
    # se 0.1; 256x6 0.80, 128x12 0.50, 256x12 0.90 (one scored seed each, se 0.05).
    trends = build_report([make_grid_sweep(tmp_path)]).trends
    emb = [(g.value, g.cells, g.trials, g.mean, g.se, g.best, g.best_trial) for g in trends.by_n_emb]
    assert emb == [(128, 2, 3, pytest.approx(0.5), pytest.approx(0.0125 ** 0.5 / 2), 0.60,
                    "sw-full-e128-l6-s0"),
                   (256, 2, 2, pytest.approx(0.85), pytest.approx(0.005 ** 0.5 / 2), 0.90,
                    "sw-full-e256-l12-s0")]
    layer = [(g.value, g.trials, g.mean, g.best) for g in trends.by_n_layer]
    assert layer == [(6, 3, pytest.approx(0.65), 0.80), (12, 2, pytest.approx(0.7), 0.90)]
    assert trends.best_cell == {"label": "sw-full-e256-l12", "n_emb": 256, "n_layer": 12, "n": 1,
                                "mean": 0.9, "se": pytest.approx(0.05), "best": 0.9,
                                "tied_with": ["sw-full-e256-l6"],  # 0.1 < 1.96 * 0.0707
                                "basis": "sw-full-e256-l12 made 15 steps, sw-full-e128-l6 20, sw-full-e128-l12 "
                                         "20, sw-full-e256-l6 40; this compares throughput as much as the settings"}
    cell = [c for c in trends.cells if c.label == "sw-full-e128-l6"][0]
    assert (cell.n, cell.seeds, cell.mean, cell.low, cell.high, cell.noise) == (
        2, [0, 1], pytest.approx(0.5), 0.40, 0.60, "seeds")
    assert cell.sd == pytest.approx(0.02 ** 0.5) and cell.se == pytest.approx(0.1)
    running = [c for c in trends.cells if c.label == "sw-full-e256-l12"][0]
    assert (running.n, running.seeds, running.unscored, running.noise) == (1, [0, 1], 1, "episodes")
    # width: 0.35 ± hypot(0.0559, 0.0354) = 0.0661, beyond 1.96 SE; depth: 0.05 ± 0.0661, not
    assert trends.width["delta"] == pytest.approx(0.35) and trends.width["clear"]
    # the planted runs log different step counts (no budget in their configs): said aloud
    assert trends.width["text"] == ("width helps: +0.3500 ± 0.0661; mean score at n_emb 256 "
                                    "minus n_emb 128; n_emb 256 made 30 steps, n_emb 128 20; this "
                                    "compares throughput as much as width")
    assert trends.depth["delta"] == pytest.approx(0.05) and not trends.depth["clear"]
    assert trends.depth["text"] == ("depth: no clear effect (+0.0500 ± 0.0661); mean score at "
                                    "n_layer 12 minus n_layer 6; n_layer 12 made 20 steps, n_layer 6 "
                                    "27; this compares throughput as much as depth")


def test_ranking_marks_ties_within_noise(tmp_path):
    by_id = {t.id: t for t in build_report([make_grid_sweep(tmp_path)]).trials}
    # 0.90 vs 0.80: gap 0.10 < 1.96 * hypot(0.05, 0.05) = 0.139 -> tied; 0.60: 0.30 -> lower
    assert by_id["sw-full-e256-l12-s0"].tied is True and by_id["sw-full-e256-l6-s0"].tied is True
    assert by_id["sw-full-e128-l6-s0"].tied is False and by_id["sw-full-e256-l12-s1"].tied is None
    assert by_id["sw-full-e256-l12-s0"].best_se == pytest.approx(0.05)
    assert by_id["sw-full-e256-l12-s0"].episodes == 2


def test_single_size_has_no_trend_and_ties_rank_by_epoch(tmp_path):
    make_run(tmp_path, "b", [0.7], n_emb=128, n_layer=6)
    make_run(tmp_path, "a", [0.1, 0.7], n_emb=128, n_layer=6)
    make_run(tmp_path, "c", [0.2, 0.1, 0.7], n_emb=128, n_layer=8)
    report = build_report([tmp_path])
    assert [t.id for t in report.trials] == ["b", "a", "c"]
    assert report.trends.width["text"] == "width: only n_emb 128 was run, no trend"
    assert report.trends.depth["text"].startswith(
        "depth: +0.0000, noise unknown (no per-episode scores and one seed), no claim")
    assert [t.tied for t in report.trials] == [True, None, None]  # no per-episode scores


def test_a_diverged_epochs_marker_is_not_a_finished_epoch(tmp_path):
    run = make_run(tmp_path, "d", [0.2], status="diverged")
    with open(run / "logs.json.txt", "a") as log:
        log.write(json.dumps({"epoch": 1, "global_step": 30, "diverged": True, "reason": "nan"}) + "\n")
    row = build_report([run]).trials[0]
    assert (row.final_epoch, row.best_epoch, row.status) == (1, 1, "diverged")


def test_truncated_last_line_is_tolerated(tmp_path):
    make_run(tmp_path, "r", [0.2, 0.3], n_emb=64, n_layer=2, tail='{"epoch": 2, "test_mean_sc')
    report = build_report([tmp_path / "r"])
    assert report.trials[0].best_score == 0.3 and report.trials[0].final_epoch == 2
    assert report.notices == [f"skipped 1 unreadable line(s) in {tmp_path / 'r' / 'logs.json.txt'}"]


def test_diffusion_policy_folders_and_size_sources(tmp_path):
    outputs = tmp_path / "outputs"
    make_dp_run(outputs / "2024.01.01" / "10.00.00_train_tf", [0.5, None, 0.65],
                {"n_emb": 256, "n_layer": 8, "n_head": 4})
    make_dp_run(outputs / "2024.01.02" / "11.00.00_train_tf", [0.4],
                {"model": {"n_emb": 128, "n_layer": 4}})
    make_run(outputs, "cfg-only", [0.3], status=None, config={"policy": {"n_emb": 64, "n_layer": 2}})
    make_run(outputs, "x-full-e384-l18-s0", [0.2], status=None)
    by_id = {t.id: t for t in build_report([outputs]).trials}
    dp = by_id["2024.01.01/10.00.00_train_tf"]
    assert (dp.source, dp.status, dp.n_emb, dp.n_layer) == ("diffusion_policy", "unknown", 256, 8)
    assert (dp.best_score, dp.best_epoch, dp.success_rate) == (0.65, 3, None)
    nested = by_id["2024.01.02/11.00.00_train_tf"]
    assert (nested.n_emb, nested.n_layer) == (128, 4)
    assert (by_id["cfg-only"].n_emb, by_id["cfg-only"].status) == (64, "unknown")
    assert (by_id["x-full-e384-l18-s0"].n_emb, by_id["x-full-e384-l18-s0"].n_layer) == (384, 18)


def test_a_trial_reached_twice_counts_once(tmp_path):
    sweep = make_grid_sweep(tmp_path)
    once = build_report([sweep])
    twice = build_report([sweep, sweep / "sw-full-e128-l6-s0", tmp_path / "." / "sw"])
    assert [t.id for t in twice.trials] == [t.id for t in once.trials]
    assert [(c.label, c.n, c.se) for c in twice.trends.cells] == [(c.label, c.n, c.se) for c in once.trends.cells]
    assert twice.notices == once.notices + ["7 trial(s) under more than one of the given folders were counted once"]


def test_planned_trials_of_two_sweeps_with_one_name_both_count(tmp_path):
    for name in ("a", "b"):
        make_run(tmp_path / name, f"sweep-{name}", [0.5])
        (tmp_path / name / "sweep.json").write_text(json.dumps({"trials": {"sweep-e64-l2-s1": {"status": "queued"}}}))
    report = build_report([tmp_path / "a", tmp_path / "b"])
    assert [t.id for t in report.trials].count("sweep-e64-l2-s1") == 2 and report.notices == []


def test_an_unreadable_sweep_state_is_a_notice(tmp_path):
    run = make_run(tmp_path, "a", [0.5], status=None)
    (tmp_path / "sweep.json").write_text("[1]")
    for given in ([tmp_path], [run]):
        report = build_report(given)
        assert report.trials[0].status == "unknown"
        assert report.notices == [f"ignored {tmp_path / 'sweep.json'} is a JSON list, expected an object"]


def test_sweep_state_by_id_object_is_read_too(tmp_path):
    make_run(tmp_path, "a", [0.5], status=None)
    (tmp_path / "sweep.json").write_text(json.dumps({"trials": {"a": {"status": "failed"}}}))
    assert build_report([tmp_path]).trials[0].status == "failed"


def test_sweep_state_and_scoreboard_fill_gaps(tmp_path):
    make_run(tmp_path, "s-full-e128-l6-s0", [0.5], status=None)
    (tmp_path / "sweep.json").write_text(json.dumps({"trials": [
        {"id": "s-full-e128-l6-s0", "state": "stalled", "queue": "local:0"},
        {"id": "pending-one", "state": "pending", "queue": "ssh://u@h/gpu:1",
         "params": {"n_emb": 256, "n_layer": 6}},
        {"id": "s-full-e384-l6-s0"}]}))
    (tmp_path / "scoreboard.json").write_text(json.dumps({"best": None, "trials": [
        {"id": "s-full-e384-l6-s0", "score": 0.7, "status": "completed", "epochs": 9,
         "config": {"n_emb": 384, "n_layer": 6}}]}))
    by_id = {t.id: t for t in build_report([tmp_path]).trials}
    assert (by_id["s-full-e128-l6-s0"].status, by_id["s-full-e128-l6-s0"].queue) == ("stalled", "local:0")
    queued = by_id["pending-one"]
    assert (queued.status, queued.best_score, queued.n_emb, queued.queue) == (
        "pending", None, 256, "ssh://u@h/gpu:1")
    remote = by_id["s-full-e384-l6-s0"]
    assert (remote.source, remote.best_score, remote.final_epoch, remote.rank) == ("scoreboard", 0.7, 9, 1)


def test_odd_scoreboard_records_and_summary_values_are_tolerated(tmp_path):
    make_run(tmp_path, "a", [0.5], status=None, success=False)
    (tmp_path / "a" / "summary.json").write_text(json.dumps(
        {"id": "a", "status": "completed", "best_score": 0.5, "best_success_rate": True}))
    (tmp_path / "scoreboard.json").write_text(json.dumps({"trials": [
        {"id": "z", "score": 0.9, "config": "n_emb=64"}, {"id": "y", "score": True, "config": [1]},
        {"id": "x", "score": "high"}]}))
    by_id = {t.id: t for t in build_report([tmp_path]).trials}
    assert (by_id["z"].best_score, by_id["z"].n_emb, by_id["z"].rank) == (0.9, None, 1)
    assert by_id["y"].best_score is None and by_id["x"].best_score is None
    assert by_id["a"].success_rate is None  # a bool in the summary is no success rate


def test_corrupt_scoreboard_is_an_error(tmp_path):
    make_run(tmp_path, "a", [0.5])
    (tmp_path / "scoreboard.json").write_text("{not json")
    with pytest.raises(StoreError, match="scoreboard.json is corrupt"):
        build_report([tmp_path])


@pytest.mark.parametrize("setup, message", [
    (lambda p: None, "does not exist"),
    (lambda p: p.write_text("x"), "is not a folder"),
    (lambda p: p.mkdir(), "no run folders in"),
])
def test_nothing_to_report_is_one_clear_line(tmp_path, setup, message):
    target = tmp_path / "t"
    setup(target)
    with pytest.raises(ReportError, match=message) as err:
        build_report([target])
    assert "\n" not in str(err.value)


def test_a_run_that_never_rolled_out_is_listed_with_its_epochs(tmp_path):
    make_run(tmp_path / "t", "r", [None, None])
    report = build_report([tmp_path / "t"])
    headers, rows = ranking_rows(report)
    row = dict(zip(headers, rows[0]))
    assert row["max ± SE"] == "no rollout yet" and row["final epoch"] == "2" and row["rank"] == "-"


@pytest.mark.slow  # starts imf as a process
def test_report_imports_no_training_stack():
    code = ("import sys, imf.report; print([m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'matplotlib') or m.startswith(('imf.train', 'imf.model', 'imf.policy'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
