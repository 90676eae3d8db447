"""What a comparison was equal in: the report names the basis (equal training time, equal
epochs) on every trend and best-cell line, and says aloud when the sides' steps differ."""
from __future__ import annotations

import json
import re

import pytest
from _report_runs import make_dp_run, make_run

from imf.errors import ReportError
from imf.report import build_report, write_files
from imf.report.figures import curve_points
from imf.report.render import ranking_rows, trend_lines
from imf.train.console import epoch_line, progress_text
from imf_process import run_imf


def _budgeted(root, n_emb, steps_per_epoch, scores, training):
    config = {"policy": {"n_emb": n_emb, "n_layer": 2}, "training": {"batch_size": 128, **training}}
    return make_run(root, f"demo-causal-e{n_emb}-l2-s42", scores, n_emb=n_emb, n_layer=2, config=config,
                    steps_per_epoch=steps_per_epoch, epoch_s=105.0, spread=0.03)


def test_a_time_budget_is_named_and_a_throughput_gap_said_aloud(tmp_path):
    clock = {"time_budget_s": 420, "budget_clock": "wall", "num_epochs": 400}
    _budgeted(tmp_path, 64, 2250, [0.3, 0.5, 0.6, 0.7], clock)
    _budgeted(tmp_path, 128, 1075, [0.2, 0.3, 0.35, 0.36], clock)
    report = build_report([tmp_path])
    groups = [(g.value, g.best_se, g.steps, g.samples) for g in report.trends.by_n_emb]
    assert groups == [(64, pytest.approx(0.03), 9000, 9000 * 128), (128, pytest.approx(0.03), 4300, 4300 * 128)]
    width = report.trends.width["text"]
    assert width.startswith("width hurts: ")
    assert width.endswith("; at equal training time (7.0 min, wall clock): n_emb 128 made 4.3k steps, "
                          "n_emb 64 9.0k; this compares throughput as much as width")
    best = next(line for line in trend_lines(report.trends) if line.startswith("best cell"))
    assert "at equal training time (7.0 min, wall clock): demo-causal-e64-l2 made 9.0k steps, " \
           "demo-causal-e128-l2 4.3k" in best
    assert report.x_axis == "minutes"
    write_files(report, tmp_path / "out")
    text = (tmp_path / "out" / "report.md").read_text()
    assert "compared at equal training time (7.0 min, wall clock)" in text.splitlines()[2]
    assert "x-axis: minutes" in text


def test_equal_epochs_say_so_and_nothing_more(tmp_path):
    epochs = {"num_epochs": 4}
    _budgeted(tmp_path, 64, 250, [0.3, 0.5, 0.6, 0.7], epochs)
    _budgeted(tmp_path, 128, 250, [0.2, 0.3, 0.35, 0.36], epochs)
    report = build_report([tmp_path])
    assert report.trends.width["text"].endswith("mean score at n_emb 128 minus n_emb 64; at equal epochs (4)")
    assert "made" not in " ".join(trend_lines(report.trends))
    assert report.x_axis == "steps"


def test_curves_take_the_axis_asked_for_and_a_single_rollout_is_a_point(tmp_path):
    run = _budgeted(tmp_path, 64, 250, [None, 0.4], {"num_epochs": 2})
    report = build_report([run], x_axis="samples")
    (curve,) = report.curves
    assert curve_points(curve, "samples") == [(500 * 128.0, 0.4, pytest.approx(0.03))]
    assert curve_points(curve, "minutes") == [(3.5, 0.4, pytest.approx(0.03))]
    assert curve_points(curve, "epoch") == [(2.0, 0.4, pytest.approx(0.03))]


def test_the_samples_axis_reads_a_runs_logged_samples_where_an_early_batch_made_them_fewer(tmp_path):
    run = _budgeted(tmp_path, 64, 250, [None, 0.4], {"num_epochs": 2, "early_batch_size": 32,
                                                      "early_batch_samples": 8000})
    rows = [json.loads(line) for line in (run / "logs.json.txt").read_text().splitlines()]
    rows[0]["samples"], rows[1]["samples"] = 250 * 32, 250 * 32 + 250 * 128  # epoch 1 at the early batch
    (run / "logs.json.txt").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = build_report([run], x_axis="samples")
    (curve,) = report.curves
    assert curve_points(curve, "samples") == [(250 * 160.0, 0.4, pytest.approx(0.03))]
    assert report.trials[0].samples == 250 * 160
    with pytest.raises(ReportError, match=r"--x 'hours': the curves' x-axis is one of epoch, steps, samples, minutes"):
        build_report([run], x_axis="hours")


def test_the_last_k_column_gives_its_n_and_a_dp_run_without_rollouts_is_listed(tmp_path):
    _budgeted(tmp_path, 64, 250, [None, 0.71], {"num_epochs": 2})
    make_dp_run(tmp_path / "dp", [None, None, None], {"n_emb": 256, "n_layer": 8})
    report = build_report([tmp_path])
    headers, rows = ranking_rows(report)
    rows = {r[1]: dict(zip(headers, r)) for r in rows}
    assert rows["demo-causal-e64-l2-s42"]["last-3 mean"] == "0.7100 ± 0.0300 (n=1)"
    dp = next(r for tid, r in rows.items() if tid != "demo-causal-e64-l2-s42")
    assert dp["max ± SE"] == "no rollout yet" and dp["final epoch"] == "3"


def test_the_epoch_line_shows_budget_progress_under_a_time_budget():
    record = {"epoch": 11, "global_step": 3000, "train_loss": 1.0, "val_loss": 2.0, "lr": 1e-4, "train_s": 366.0}
    assert epoch_line(record, 400, 900.0, "cpu").startswith("epoch 12 · 6.1/15.0 min cpu step 3000 ")
    assert epoch_line(record, 400).startswith("epoch 12/400 step 3000 ")
    assert progress_text(0, 400, 900.0, "wall", None) == "epoch 1 · 0.0/15.0 min wall"


# the time budget, not the epochs, ends these trials (num_epochs is far out of reach)
TINY = ["training.max_train_steps=10", "training.batch_size=16", "eval.n_test=2", "eval.n_train=0",
        "eval.max_steps=16", "eval.n_workers=1", "data.demo_episodes=4", "logging.trackers=none",
        "training.num_epochs=1000", "training.rollout_every=3", "training.time_budget_s=6",
        "training.budget_clock=cpu"]


@pytest.mark.slow
def test_two_real_time_budgeted_trials_of_different_widths(tmp_path, demo_cache):
    for n_emb in (32, 64):
        proc = run_imf("trial", "smoke", *TINY, f"data.cache_dir={demo_cache}", f"policy.n_emb={n_emb}",
                       "--out", str(tmp_path / "runs" / f"w{n_emb}"), "--id", f"w-e{n_emb}-s42", "--store", "none")
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = [line for line in proc.stdout.splitlines() if line.startswith("epoch ")]
        assert lines and all(re.match(r"epoch \d+ · \d+\.\d/0\.1 min cpu step ", line) for line in lines), lines
    out = run_imf("report", str(tmp_path / "runs"), "--out", str(tmp_path / "report"))
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    steps = {t["n_emb"]: t["steps"] for t in report["trials"]}
    assert all(isinstance(v, int) and v > 0 for v in steps.values())
    md = (tmp_path / "report" / "report.md").read_text()
    width = next(line for line in md.splitlines() if line.startswith("- width"))
    assert "at equal training time (0.1 min, cpu clock)" in width
    # tiny models on a shared machine: which one makes more steps is noise, so check both readings
    if max(steps.values()) > 1.1 * min(steps.values()):
        assert f"n_emb 64 made {steps[64]} steps, n_emb 32 {steps[32]}; this compares throughput" in width
    else:
        assert " made " not in width


def _sweep(root, mask, steps_per_epoch):
    for seed in (0, 1):
        config = {"policy": {"mask": mask, "n_emb": 128, "n_layer": 6},
                  "training": {"seed": seed, "time_budget_s": 900, "budget_clock": "cpu", "batch_size": 64}}
        make_run(root / mask, f"{mask}-{mask}-e128-l6-s{seed}", [0.4, 0.5 + 0.01 * seed], n_emb=128, n_layer=6,
                 config=config, steps_per_epoch=steps_per_epoch, epoch_s=450.0)
    return root / mask


def test_imf_report_a_b_names_the_basis_and_the_steps_of_both_sides(tmp_path):
    from imf.report import build_comparison
    comparison = build_comparison(_sweep(tmp_path, "causal", 1000), _sweep(tmp_path, "full", 600))
    assert comparison.sentences[-1] == ("basis: both at equal training time (15.0 min, cpu clock): in the shared "
                                        "cells full made 1.2k steps, causal 2.0k; this compares throughput as much "
                                        "as full against causal")
    same = build_comparison(_sweep(tmp_path / "b", "causal", 1000), _sweep(tmp_path / "b", "full", 1000))
    assert same.sentences[-1] == "basis: both at equal training time (15.0 min, cpu clock)"
