"""write_report: report.md, report.json, report.csv and heatmap.png on disk."""
from __future__ import annotations

import csv
import json
import sys

import pytest
from _report_runs import make_grid_sweep, make_run

from imf.errors import ReportError
from imf.report import MATPLOTLIB_MISSING, build_report, heatmap_text, render_text, write_files, write_report


def test_all_four_files_are_written(tmp_path):
    sweep = make_grid_sweep(tmp_path)
    report = write_report(sweep)
    assert (sweep / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((sweep / "report.json").read_text())
    assert data == json.loads(json.dumps(report.to_dict()))
    assert data["trials"][0]["id"] == "sw-full-e256-l12-s0"
    assert data["trends"]["width"]["delta"] == pytest.approx(0.35)
    rows = list(csv.DictReader((sweep / "report.csv").open()))
    assert [r["rank"] for r in rows] == ["1", "2", "3", "4", "5", ""]
    assert rows[1]["id"] == "sw-full-e256-l6-s0" and rows[1]["best_epoch"] == "4"
    assert float(rows[1]["best_score"]) == 0.8 and rows[1]["success_rate"] == "0.4"
    md = (sweep / "report.md").read_text()
    assert "| 1    | sw-full-e256-l12-s0 | diverged" in md
    assert "- width helps: +0.3500 ± 0.0661; mean score at n_emb 256 minus n_emb 128" in md
    assert ("- best cell: sw-full-e256-l12 (n_emb 256 x n_layer 12), mean 0.9000 ± 0.0500 over "
            "1 seed(s), best 0.9000; tied within noise: sw-full-e256-l6") in md
    assert "| 2    | sw-full-e256-l6-s0  | completed     | 256   | 6       | 0    " in md
    assert "](heatmap.png)" in md and "](curves.png)" in md
    assert (sweep / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_out_folder_and_rewrite(tmp_path):
    sweep = make_grid_sweep(tmp_path)
    out = tmp_path / "new" / "out"
    write_report(sweep, out)
    write_report(sweep, out)
    assert sorted(p.name for p in out.iterdir()) == ["curves.png", "heatmap.png", "report.csv",
                                                     "report.json", "report.md"]
    assert not (sweep / "report.md").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReportError, match="is a file"):
        write_files(build_report([sweep]), tmp_path / "file")


def test_missing_matplotlib_skips_only_the_png(tmp_path, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    sweep = make_grid_sweep(tmp_path)
    report = write_report(sweep)
    assert MATPLOTLIB_MISSING in report.notices and "pip install 'imf[plot]'" in MATPLOTLIB_MISSING
    assert not (sweep / "heatmap.png").exists() and not (sweep / "curves.png").exists()
    for name in ("report.md", "report.json", "report.csv"):
        assert (sweep / name).stat().st_size > 0
    md = (sweep / "report.md").read_text()
    assert ".png)" not in md and md.count(MATPLOTLIB_MISSING) == 1
    assert MATPLOTLIB_MISSING in json.loads((sweep / "report.json").read_text())["notices"]


def test_no_sizes_means_no_heatmap_but_a_report(tmp_path):
    make_run(tmp_path, "plain", [0.4])
    report = write_report(tmp_path)
    assert not (tmp_path / "heatmap.png").exists()
    assert "heatmap.png skipped: no trial has both n_emb and n_layer" in report.notices
    assert "no trial has a known n_emb or n_layer: no trends" in render_text(report)


def test_text_rendering(tmp_path):
    report = build_report([make_grid_sweep(tmp_path)])
    text = render_text(report)
    lines = text.splitlines()
    assert lines[0].startswith("6 trial(s), 5 scored, in 4 scored cell(s); ranked by max "
                               "test_mean_score; ± is one standard error")
    assert lines[2].split() == ["rank", "trial", "status", "n_emb", "n_layer", "seed", "final",
                                "epoch", "max", "±", "SE", "best", "epoch", "last-3", "mean",
                                "selection", "±", "SE", "success", "selection", "success", "vs", "#1"]
    assert lines[3].split() == ["1", "sw-full-e256-l12-s0", "diverged", "256", "12", "0", "2",
                                "0.9000", "±", "0.0500", "1", "0.9000", "±", "0.0500", "(n=1)", "-",
                                "0.450", "-", "best"]
    # last-3 mean of 0.50, 0.60, 0.55 = 0.55; the rollouts share seeds: SE = mean of SEs
    assert lines[5].split()[:2] == ["3", "sw-full-e128-l6-s0"]
    assert lines[5].split()[10:15] == ["2", "0.5500", "±", "0.0500", "-"]
    assert lines[5].split()[-1] == "lower" and lines[4].split()[-1] == "tied"
    assert ("  depth: no clear effect (+0.0500 ± 0.0661); mean score at n_layer 12 minus "
            "n_layer 6; n_layer 12 made 20 steps, n_layer 6 27; this compares throughput as much "
            "as depth") in lines
    heat = heatmap_text(report.trends).splitlines()
    assert heat[1].split() == ["n_layer\\n_emb", "128", "256"]
    assert heat[2].split() == ["6", "0.500±0.100", "n=2", "0.800±0.050", "n=1"]
    assert heat[3].split() == ["12", "0.500±0.050", "n=1", "0.900±0.050", "n=1"]
