"""`imf report --rank-by max|last-k|selection`: the selection-seed score ranks by default where
every scored trial has one (final_eval.json), else max; the header says which; the cells, the
trends and the best cell follow the same score; a bad value is one line."""
from __future__ import annotations

import json

import pytest
from imf_process import run_in_process as imf
from _report_runs import make_grid_sweep, make_run

from imf.errors import ReportError
from imf.report import build_comparison, build_report, render_compare_text, render_markdown, render_text

# best.pt on 200 selection episodes: the narrow models win there, the wide ones by max
SELECTION = {"sw-full-e128-l6-s0": 0.70, "sw-full-e128-l6-s1": 0.66, "sw-full-e256-l6-s0": 0.40,
             "sw-full-e128-l12-s0": 0.72, "sw-full-e256-l12-s0": 0.30}
BY_MAX = "ranked by max test_mean_score"
BY_SELECTION = "ranked by selection score (200 selection episodes)"


def final_eval(run, mean: float, se: float = 0.02, episodes: int = 200) -> None:
    data = {"checkpoint": "checkpoints/best.pt", "seeds": "selection", "episodes": episodes,
            "seed_start": 500000, "mean": mean, "se": se, "per_seed": []}
    (run / "final_eval.json").write_text(json.dumps(data))


def scored_sweep(tmp_path, only: tuple[str, ...] | None = None):
    """The grid sweep of tests/_report_runs.py with final_eval.json in its scored trials."""
    sweep = make_grid_sweep(tmp_path)
    for trial, mean in SELECTION.items():
        if only is None or trial in only:
            final_eval(sweep / trial, mean)
    return sweep




def test_selection_scores_rank_by_default_and_the_header_says_so(tmp_path):
    report = build_report([scored_sweep(tmp_path)])
    assert report.ranked_by == {"by": "selection", "text": BY_SELECTION, "name": "selection score",
                                "short": "selection"}
    ranked = [(t.id, t.rank) for t in report.trials]
    assert ranked == [("sw-full-e128-l12-s0", 1), ("sw-full-e128-l6-s0", 2), ("sw-full-e128-l6-s1", 3),
                      ("sw-full-e256-l6-s0", 4), ("sw-full-e256-l12-s0", 5), ("sw-full-e256-l12-s1", None)]
    # ties with #1 on the selection seeds: 0.72 - 0.70 < 1.96 x 0.028; 0.72 - 0.66 is beyond it
    assert [t.tied for t in report.trials[:3]] == [True, True, False]
    assert render_text(report).splitlines()[0].startswith(
        f"6 trial(s), 5 scored, in 4 scored cell(s); {BY_SELECTION}; ± is one standard error")
    assert BY_SELECTION in render_markdown(report, []).split("## Ranking")[0]
    assert json.loads(json.dumps(report.to_dict()))["ranked_by"]["text"] == BY_SELECTION


def test_cells_trends_and_best_cell_follow_the_selection_score(tmp_path):
    report = build_report([scored_sweep(tmp_path)])
    cells = {c.label: c for c in report.trends.cells}
    narrow = cells["sw-full-e128-l6"]  # 0.70 and 0.66: sd 0.028, SE over seeds 0.02
    assert (narrow.n, narrow.mean, narrow.low, narrow.high) == (2, pytest.approx(0.68), 0.66, 0.70)
    assert (narrow.se, narrow.noise) == (pytest.approx(0.02), "seeds")
    # n_emb 128: (0.68 + 0.72) / 2; n_emb 256: (0.40 + 0.30) / 2; SE hypot(0.0141, 0.0141) = 0.02
    assert report.trends.width["text"].startswith("width hurts: -0.3500 ± 0.0200; mean selection score "
                                                  "at n_emb 256 minus n_emb 128")
    best = report.trends.best_cell
    assert (best["label"], best["mean"], best["tied_with"]) == ("sw-full-e128-l12", 0.72, ["sw-full-e128-l6"])
    text = render_text(report)
    assert "selection: mean ± sd" in text and "mean over seeds of selection score ± SE" in text


def test_rank_by_max_keeps_the_max_with_selection_scores_present(tmp_path):
    report = build_report([scored_sweep(tmp_path)], rank_by="max")
    assert report.ranked_by["text"] == BY_MAX
    assert [t.id for t in report.trials][:2] == ["sw-full-e256-l12-s0", "sw-full-e256-l6-s0"]
    assert report.trends.width["text"].startswith("width helps: +0.3500")
    assert "max: mean ± sd" in render_text(report)


def test_without_selection_scores_max_ranks(tmp_path):
    report = build_report([make_grid_sweep(tmp_path)])
    assert report.ranked_by["text"] == BY_MAX
    assert [t.rank for t in report.trials] == [1, 2, 3, 4, 5, None]


def test_some_selection_scores_rank_by_max_by_default_and_by_selection_when_asked(tmp_path):
    sweep = scored_sweep(tmp_path, only=("sw-full-e128-l6-s0", "sw-full-e256-l6-s0"))
    default = build_report([sweep])
    assert default.ranked_by["text"] == (f"{BY_MAX} (2 of 5 scored trials have a selection score; "
                                         "--rank-by selection ranks those)")
    asked = build_report([sweep], rank_by="selection")
    assert asked.ranked_by["text"] == f"{BY_SELECTION}; 3 trial(s) without one not ranked"
    assert [(t.id, t.rank) for t in asked.trials][:3] == [
        ("sw-full-e128-l6-s0", 1), ("sw-full-e256-l6-s0", 2), ("sw-full-e256-l12-s0", None)]  # then by max


def test_rank_by_selection_without_any_selection_score_is_an_error(tmp_path):
    with pytest.raises(ReportError, match=r"--rank-by selection: no trial has a selection score"):
        build_report([make_grid_sweep(tmp_path)], rank_by="selection")


def test_rank_by_last_k(tmp_path):
    make_run(tmp_path, "spike", [0.9, 0.2, 0.2, 0.3], spread=0.05)  # max 0.9, last 3: 0.233
    make_run(tmp_path, "steady", [0.5, 0.7, 0.7, 0.7], spread=0.05)  # max 0.7, last 3: 0.7
    assert [t.id for t in build_report([tmp_path]).trials] == ["spike", "steady"]
    report = build_report([tmp_path], rank_by="last-k")
    assert report.ranked_by["text"] == "ranked by last-3 mean of test_mean_score"
    assert [(t.id, t.rank, t.tied) for t in report.trials] == [("steady", 1, True), ("spike", 2, False)]
    assert "last-3: mean ± sd" in render_text(report)


def test_selection_episodes_that_differ_are_a_range(tmp_path):
    final_eval(make_run(tmp_path, "a", [0.5]), 0.5, episodes=50)
    final_eval(make_run(tmp_path, "b", [0.6]), 0.4, episodes=200)
    assert build_report([tmp_path]).ranked_by["text"] == "ranked by selection score (50 to 200 selection episodes)"


def test_cli_rank_by_and_the_files_say_so(tmp_path, monkeypatch, capsys):
    sweep = scored_sweep(tmp_path)
    code, out, _ = imf(monkeypatch, capsys, "report", str(sweep), "--out", str(tmp_path / "o"))
    assert code == 0 and BY_SELECTION in out.splitlines()[0]
    assert BY_SELECTION in (tmp_path / "o" / "report.md").read_text()
    code, out, _ = imf(monkeypatch, capsys, "report", str(sweep), "--rank-by", "max", "--json")
    assert code == 0 and json.loads(out)["ranked_by"]["by"] == "max"


def test_a_bad_rank_by_is_one_line(tmp_path, monkeypatch, capsys):
    code, out, err = imf(monkeypatch, capsys, "report", str(make_grid_sweep(tmp_path)), "--rank-by", "best")
    assert code == 2 and out == ""
    assert err == "imf: error: --rank-by 'best': expected max, last-k or selection\n"


def two_sweeps(tmp_path):
    """Sweeps A and B of two cells; B is ahead by max, A on the selection seeds."""
    for mask, top, selection in (("causal", 0.5, 0.7), ("full", 0.8, 0.4)):
        for emb in (64, 128):
            for seed in (1, 2):
                config = {"policy": {"mask": mask, "n_emb": emb, "n_layer": 2}, "training": {"seed": seed}}
                run = make_run(tmp_path / mask, f"{mask}-e{emb}-l2-s{seed}", [top - 0.1, top],
                               n_emb=emb, n_layer=2, config=config, spread=0.02)
                final_eval(run, selection + 0.01 * seed)
    return tmp_path / "causal", tmp_path / "full"


def test_two_sweeps_compare_on_the_ranking_score(tmp_path):
    a, b = two_sweeps(tmp_path)
    by_selection = build_comparison(a, b)
    assert all(c["diff"] == pytest.approx(-0.3) for c in by_selection.cells)
    assert "mean over seeds of selection score" in render_compare_text(by_selection)
    by_max = build_comparison(a, b, rank_by="max")
    assert all(c["diff"] == pytest.approx(0.3) for c in by_max.cells)
    assert "mean over seeds of max test_mean_score" in render_compare_text(by_max)


def test_two_sweeps_share_one_default(tmp_path):
    a, b = two_sweeps(tmp_path)
    (a / "causal-e64-l2-s1" / "final_eval.json").unlink()  # A lacks one: both by max
    assert all(c["diff"] == pytest.approx(0.3) for c in build_comparison(a, b).cells)
