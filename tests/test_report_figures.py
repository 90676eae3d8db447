"""heatmap.png and curves.png: drawn, readable back, missing cells marked."""
from __future__ import annotations

import json

import pytest
from _report_runs import make_run

from imf.report import build_report, heatmap_text, write_files
from imf.report.figures import write_curves, write_heatmap

image = pytest.importorskip("matplotlib.image")


def _sweep(tmp_path):
    """128x6 with two seeds, 256x6 with one, 256x12 planned but unscored, 128x12 never run."""
    sweep = tmp_path / "sw"
    make_run(sweep, "sw-full-e128-l6-s0", [0.30, 0.50, 0.45], n_emb=128, n_layer=6, spread=0.05)
    make_run(sweep, "sw-full-e128-l6-s1", [0.20, 0.40, 0.42], n_emb=128, n_layer=6, spread=0.05)
    make_run(sweep, "sw-full-e256-l6-s0", [0.40, 0.70], n_emb=256, n_layer=6, spread=0.05)
    make_run(sweep, "sw-full-e256-l12-s0", [None], n_emb=256, n_layer=12, status="running")
    return sweep


def test_text_heatmap_marks_missing_and_unscored_cells(tmp_path):
    lines = heatmap_text(build_report([_sweep(tmp_path)]).trends).splitlines()
    # 128x6: max 0.50 and 0.42 -> mean 0.46, sd 0.0566, SE over the two seeds 0.04
    assert lines[2].split() == ["6", "0.460±0.040", "n=2", "0.700±0.050", "n=1"]
    assert lines[3].split() == ["12", "not", "run", "no", "score"]


def test_pngs_are_drawn_and_read_back(tmp_path):
    report = build_report([_sweep(tmp_path)])
    written = write_files(report, tmp_path / "out")
    assert [p.name for p in written][-2:] == ["heatmap.png", "curves.png"]
    for name, min_width in (("heatmap.png", 300), ("curves.png", 900)):
        pixels = image.imread(tmp_path / "out" / name)
        assert pixels.shape[1] >= min_width and pixels.std() > 0.05  # not a blank canvas
    md = (tmp_path / "out" / "report.md").read_text()
    assert "](heatmap.png)" in md and "](curves.png)" in md
    curves = json.loads((tmp_path / "out" / "report.json").read_text())["curves"]
    by_id = {c["id"]: c for c in curves}
    assert by_id["sw-full-e128-l6-s1"]["cell"] == by_id["sw-full-e128-l6-s0"]["cell"] == "sw-full-e128-l6"
    assert by_id["sw-full-e256-l6-s0"]["rollouts"] == [[1, 0.4, pytest.approx(0.05)],
                                                        [2, 0.7, pytest.approx(0.05)]]
    assert by_id["sw-full-e256-l6-s0"]["val_loss"] == [[1, 2.0], [2, 1.0]]


def test_figures_without_data_say_why(tmp_path):
    make_run(tmp_path, "plain", [0.4])
    report = build_report([tmp_path])
    assert write_heatmap(report.trends, tmp_path / "h.png") == ("h.png skipped: no trial has both "
                                                                "n_emb and n_layer")
    report.curves[0].rollouts, report.curves[0].val_loss = [], []
    assert write_curves(report.curves, tmp_path / "c.png") == ("c.png skipped: no trial logged a "
                                                               "rollout or a val loss")
    assert not (tmp_path / "h.png").exists() and not (tmp_path / "c.png").exists()
