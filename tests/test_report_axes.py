"""Every numeric setting that varies between cells is a trend of its own, reported like n_emb and
n_layer: a line per value, and an effect from the smallest to the largest value that is claimed
only beyond the noise."""
from __future__ import annotations

import json
import re

import pytest
from _report_runs import make_run
from typer.testing import CliRunner

from imf.cli import app
from imf.report import build_report
from imf.report.render import trend_lines
from imf_process import run_imf


def _plant(root, best: dict[int, list[float]]) -> None:
    """Two epochs per run, the second its best; more demos, more steps per epoch (as in a trial)."""
    for demos, scores in best.items():
        for seed, score in enumerate(scores):
            config = {"policy": {"n_emb": 64, "n_layer": 2}, "data": {"demo_episodes": demos},
                      "training": {"seed": seed, "num_epochs": 2, "batch_size": 32}}
            make_run(root, f"d-causal-e64-l2-s{seed}-demo_episodes{demos}", [0.05, score], n_emb=64,
                     n_layer=2, config=config, spread=0.01, steps_per_epoch=demos // 10)


def test_more_demos_beyond_the_noise_is_claimed_with_its_basis(tmp_path):
    _plant(tmp_path, {50: [0.20, 0.22], 100: [0.50, 0.52], 200: [0.80, 0.82]})
    report = build_report([tmp_path])
    (axis,) = report.trends.axes
    assert axis.key == "data.demo_episodes" and [g.value for g in axis.groups] == [50, 100, 200]
    assert axis.effect["clear"] and axis.effect["delta"] == pytest.approx(0.60)
    lines = trend_lines(report.trends)
    assert ("data.demo_episodes 50: mean 0.2100 ± 0.0100 over 1 cell(s), 2 trial(s); best 0.2200 ± 0.0100 "
            "(d-causal-e64-l2-s1-demo_episodes50)") in lines
    assert ("data.demo_episodes: more helps: +0.6000 ± 0.0141; mean score at data.demo_episodes 200 minus "
            "data.demo_episodes 50; at equal epochs (2): data.demo_episodes 200 made 40 steps, "
            "data.demo_episodes 50 10; this compares throughput as much as data.demo_episodes") in lines
    assert "width: only n_emb 64 was run, no trend" in lines


def test_a_gap_within_the_noise_is_no_claim_and_the_json_holds_the_axis(tmp_path):
    _plant(tmp_path / "runs", {50: [0.50, 0.60], 100: [0.45, 0.65], 200: [0.52, 0.62]})
    result = CliRunner().invoke(app, ["report", str(tmp_path / "runs"), "--json", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    (axis,) = json.loads(result.stdout)["trends"]["axes"]
    assert axis["key"] == "data.demo_episodes" and [g["value"] for g in axis["groups"]] == [50, 100, 200]
    assert axis["groups"][0]["mean"] == pytest.approx(0.55) and axis["groups"][0]["se"] == pytest.approx(0.05)
    assert not axis["effect"]["clear"] and axis["effect"]["se"] == pytest.approx(0.0707, abs=1e-4)
    assert axis["effect"]["text"].startswith("data.demo_episodes: no clear effect (+0.0200 ± 0.0707); "
                                             "mean score at data.demo_episodes 200 minus data.demo_episodes 50")
    markdown = (tmp_path / "o" / "report.md").read_text()
    assert f"- {axis['effect']['text']}" in markdown.splitlines()


def test_a_float_setting_is_an_axis_and_flags_or_names_are_not(tmp_path):
    for lr, ema, mask, score in ((1e-4, True, "causal", 0.30), (3e-4, False, "full", 0.50)):
        config = {"policy": {"n_emb": 64, "n_layer": 2, "mask": mask}, "training": {"lr": lr, "use_ema": ema}}
        make_run(tmp_path, f"lr-{mask}-e64-l2-s42", [score], n_emb=64, n_layer=2, config=config, spread=0.01)
    report = build_report([tmp_path])
    assert [a.key for a in report.trends.axes] == ["training.lr"]
    assert report.trends.axes[0].effect["text"].startswith(
        "training.lr: more helps: +0.2000 ± 0.0141; mean score at training.lr 0.0003 minus training.lr 0.0001")
    assert "training.lr 0.0001: mean 0.3000 ± 0.0100 over 1 cell(s), 1 trial(s); best 0.3000 ± 0.0100 " \
           "(lr-causal-e64-l2-s42)" in trend_lines(report.trends)


@pytest.mark.slow
def test_a_real_sweep_over_demo_episodes_reports_its_trend(tmp_path, demo_cache):
    proc = run_imf("sweep", "smoke", f"data.cache_dir={demo_cache}", "logging.trackers=none",
                   "training.max_train_steps=2", "eval.n_test=2", "eval.n_train=0", "eval.max_steps=8",
                   "--grid", "data.demo_episodes=4,8", "--epochs", "1", "--queue", "local:cpu",
                   "--name", "data", "--out", str(tmp_path), "--poll", "1", "--stall-timeout", "600")
    assert proc.returncode == 0, proc.stderr[-2000:]
    sweep = tmp_path / "data"
    states = [t["state"] for t in json.loads((sweep / "sweep.json").read_text())["trials"]]
    assert states == ["completed", "completed"]
    trends = (sweep / "report.md").read_text().split("## Trends")[1].split("## Heatmap")[0]
    for demos in (4, 8):
        assert re.search(rf"^- data\.demo_episodes {demos}: mean \d\.\d{{4}}", trends, re.M), trends
    assert re.search(r"^- data\.demo_episodes: .*mean score at data\.demo_episodes 8 minus "
                     r"data\.demo_episodes 4; at equal epochs \(1\)", trends, re.M), trends
    axes = json.loads((sweep / "report.json").read_text())["trends"]["axes"]
    assert [(a["key"], [g["value"] for g in a["groups"]]) for a in axes] == [("data.demo_episodes", [4, 8])]
