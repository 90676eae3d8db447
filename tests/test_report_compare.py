"""Comparing two sweeps whose true difference is known; grids that differ; bad folders."""
from __future__ import annotations

import csv
import json

import pytest
from _report_runs import make_run

from imf.errors import ReportError
from imf.report import build_comparison, render_compare_text, write_compare_files
from imf_process import run_imf

BASE = {(128, 6): 0.40, (128, 12): 0.50, (256, 6): 0.55, (256, 12): 0.60}
SEED_OFFSETS = {0: -0.02, 1: 0.0, 2: 0.02}  # sd 0.02 over seeds, SE of a cell 0.02 / sqrt(3)
CELL_SE = 0.02 / 3 ** 0.5


def make_sweep(root, mask: str, gain_at_12: float, sizes=BASE):
    """One trial per cell and seed; scores are BASE + seed offset (+ gain_at_12 at n_layer 12)."""
    sweep = root / mask
    for (emb, layer), base in sizes.items():
        for seed, offset in SEED_OFFSETS.items():
            score = base + offset + (gain_at_12 if layer == 12 else 0.0)
            config = {"policy": {"mask": mask, "n_emb": emb, "n_layer": layer},
                      "training": {"seed": seed, "lr": 1e-4}}
            make_run(sweep, f"{mask}-{mask}-e{emb}-l{layer}-s{seed}", [score - 0.1, score],
                     n_emb=emb, n_layer=layer, config=config)
    return sweep


def test_known_difference_per_cell_and_per_axis(tmp_path):
    causal = make_sweep(tmp_path, "causal", 0.0)
    full = make_sweep(tmp_path, "full", 0.10)
    comparison = build_comparison(causal, full)
    assert (comparison.name_a, comparison.name_b) == ("causal", "full")
    assert comparison.differs == {"policy.mask": ["causal", "full"]}
    assert comparison.notes == []
    diff_se = (2 * CELL_SE ** 2) ** 0.5  # 0.0163
    by_cell = {(c["n_emb"], c["n_layer"]): c for c in comparison.cells}
    assert set(by_cell) == set(BASE)
    for (emb, layer), cell in by_cell.items():
        assert cell["diff"] == pytest.approx(0.10 if layer == 12 else 0.0, abs=1e-12)
        assert cell["se"] == pytest.approx(diff_se) and cell["n_a"] == cell["n_b"] == 3
        assert cell["clear"] is (layer == 12)
    # two cells per axis value: SE of their mean diff = sqrt(2) * 0.0163 / 2 = 0.0115
    assert comparison.sentences[1] == ("n_layer: no clear difference at n_layer 6 (+0.000 ± 0.012); "
                                       "full beats causal at n_layer 12 (+0.100 ± 0.012) "
                                       "(full - causal, ± SE)")
    assert comparison.sentences[0] == ("n_emb: full beats causal at n_emb 128 (+0.050 ± 0.012), "
                                       "256 (+0.050 ± 0.012) (full - causal, ± SE)")
    assert comparison.sentences[2] == ("over all 4 shared cell(s): full - causal = +0.050 ± 0.008, "
                                       "full better")


def test_files_and_text(tmp_path):
    comparison = build_comparison(make_sweep(tmp_path, "causal", 0.0),
                                  make_sweep(tmp_path, "full", 0.10))
    written = write_compare_files(comparison, tmp_path / "cmp")
    assert [p.name for p in written] == ["compare.md", "compare.json", "compare.csv",
                                         "compare_heatmap.png"]
    png = (tmp_path / "cmp" / "compare_heatmap.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    rows = list(csv.DictReader((tmp_path / "cmp" / "compare.csv").open()))
    assert [(r["n_emb"], r["n_layer"], r["clear"]) for r in rows] == [
        ("128", "6", "False"), ("128", "12", "True"), ("256", "6", "False"), ("256", "12", "True")]
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["name_b"] == "full"
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "![full - causal per cell](compare_heatmap.png)" in md
    text = render_compare_text(comparison)
    assert "full beats causal at n_layer 12" in text and "no clear difference" in text


def test_different_grids_compare_the_shared_cells_with_a_note(tmp_path):
    causal = make_sweep(tmp_path, "causal", 0.0)
    full = make_sweep(tmp_path, "full", 0.10, sizes={k: v for k, v in BASE.items() if k[0] == 128}
                      | {(384, 6): 0.7})
    comparison = build_comparison(causal, full)
    assert sorted((c["n_emb"], c["n_layer"]) for c in comparison.cells) == [(128, 6), (128, 12)]
    assert comparison.notes == ["the grids differ: compared the 2 shared cell(s) only; only in A: "
                                "n_emb 256 x n_layer 6, n_emb 256 x n_layer 12; only in B: "
                                "n_emb 384 x n_layer 6"]


def test_no_shared_cell_is_one_error(tmp_path):
    causal = make_sweep(tmp_path, "causal", 0.0, sizes={(128, 6): 0.4})
    full = make_sweep(tmp_path, "full", 0.0, sizes={(256, 6): 0.4})
    with pytest.raises(ReportError, match="share no scored cell") as err:
        build_comparison(causal, full)
    assert "\n" not in str(err.value)


@pytest.mark.slow  # starts imf as a process
def test_cli_compares_two_sweeps_into_the_second(tmp_path):
    causal = make_sweep(tmp_path, "causal", 0.0)
    full = make_sweep(tmp_path, "full", 0.10)
    out = run_imf("report", str(causal), str(full), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "full beats causal at n_layer 12 (+0.100 ± 0.012)" in out.stdout
    assert (full / "compare.md").exists() and not (causal / "compare.md").exists()
    assert not (tmp_path / "compare.md").exists()
    out = run_imf("report", str(causal), str(full), "--no-compare", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["trials"]) == 24 and not (tmp_path / "report.md").exists()
    assert "report files not written: 2 folders given; give --out FOLDER" in out.stderr


@pytest.mark.slow  # starts imf as a process
@pytest.mark.parametrize("args, line", [
    (["causal", "nope"], "imf: error: {t}/nope does not exist; give a sweep folder or run folders"),
    (["causal", "--compare"], "imf: error: --compare takes two sweep folders (A B), got 1 folder(s)"),
    (["causal", "causal"], "imf: error: {t}/causal and {t}/causal are the same folder; compare two sweeps"),
])
def test_bad_compare_input_is_one_line(tmp_path, args, line):
    make_sweep(tmp_path, "causal", 0.0, sizes={(128, 6): 0.4})
    out = run_imf("report", *[str(tmp_path / a) if not a.startswith("--") else a for a in args],
               cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [line.format(t=tmp_path)]
    assert not (tmp_path / "compare.md").exists()
