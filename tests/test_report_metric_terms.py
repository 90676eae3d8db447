"""A program's report speaks its metric (issue 44, item 4): imf ranks by a higher-is-better score
(val_mse negated for goal minimize), but report.md and the terminal show the metric as written,
best first, with a legend and columns for what a program's trials have."""
from __future__ import annotations

import json
from pathlib import Path

from imf.report import build_report, render_markdown, render_text

# (lr, seed): the metric as the program wrote it
MSE = {(0.1, 1): 0.0109, (0.1, 2): 0.0119, (0.02, 1): 0.0110, (0.02, 2): 0.0128}


def _program_sweep(root: Path, values: dict[tuple[float, int], float], name: str, goal: str) -> Path:
    sweep = root / "toy"
    for (lr, seed), value in values.items():
        run = sweep / f"toy-lr{lr}-s{seed}"
        run.mkdir(parents=True)
        score = -value if goal == "minimize" else value
        (run / "summary.json").write_text(json.dumps({
            "id": run.name, "status": "completed", "epochs_done": 1, "best_score": score, "seed": seed,
            "trainer": "command", "metric": {"name": name, "goal": goal, "value": value}}))
        (run / "config.yaml").write_text(f"trainer: command\nparams:\n  optim:\n    lr: {lr}\n"
                                         f"training:\n  seed: {seed}\n")
    return sweep


def _table(markdown: str, heading: str) -> list[list[str]]:
    lines = markdown.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0].splitlines()
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("|")]


def test_a_minimized_metric_is_shown_as_written_lowest_first(tmp_path):
    report = build_report([_program_sweep(tmp_path, MSE, "val_mse", "minimize")])
    markdown, text = render_markdown(report, []), render_text(report)
    for shown in (markdown, text):
        assert "-0.01" not in shown and "-val_mse" not in shown.split("## Notices")[0].split("## Ranking")[-1], shown
        for word in ("test_mean_score", "selection seeds", "holdout", "best epoch", "last-3", "n_emb",
                     "n_layer", "heatmap", "ensemble", "mean score at"):
            assert word not in shown.split("## Notices")[0], (word, shown)
    ranking = _table(markdown, "Ranking")
    head = ranking[0]
    assert head[:4] == ["rank", "trial", "status", "optim.lr"] and "val_mse (lower is better)" in head, head
    column = head.index("val_mse (lower is better)")
    assert [row[column] for row in ranking[2:]] == ["0.0109", "0.0110", "0.0119", "0.0128"], ranking
    assert [row[1] for row in ranking[2:]] == ["toy-lr0.1-s1", "toy-lr0.02-s1", "toy-lr0.1-s2", "toy-lr0.02-s2"]
    assert all(len(row) == len(head) for row in ranking) and not any(
        all(row[i] == "-" for row in ranking[2:]) for i in range(len(head))), ranking
    cells = {row[0]: row for row in _table(markdown, "Cells")}
    assert "val_mse: mean ± sd" in cells["cell"] and "min..max" in cells["cell"], cells["cell"]
    spread = cells["cell"].index("min..max")
    assert cells["toy-lr0.1"][spread] == "0.0109..0.0119" and cells["toy-lr0.02"][spread] == "0.0110..0.0128"
    assert cells["toy-lr0.1"][cells["cell"].index("val_mse: mean ± sd")].startswith("0.0114 ± ")
    assert "ranked by val_mse, lowest first" in markdown and "(goal minimize)" in markdown
    assert "imf's higher-is-better score, -val_mse" in markdown  # the legend says what report.json keeps
    trends = markdown.split("## Trends\n", 1)[1].split("\n## ", 1)[0]
    assert "- optim.lr 0.1: mean val_mse 0.0114 ± " in trends and "best 0.0109 (toy-lr0.1-s1)" in trends
    assert "best cell: toy-lr0.1 (optim.lr 0.1), mean val_mse 0.0114 ± " in trends, trends
    assert "optim.lr: no clear effect (-0.0005 ± " in trends
    assert "mean val_mse at optim.lr 0.1 minus optim.lr 0.02" in trends
    assert [t.id for t in report.trials][0] == "toy-lr0.1-s1" and report.trials[0].best_score < 0  # imf's score inside


def test_a_maximized_metric_keeps_its_values_under_its_own_name(tmp_path):
    rewards = {key: 1 - value for key, value in MSE.items()}
    report = build_report([_program_sweep(tmp_path, rewards, "reward", "maximize")])
    markdown = render_markdown(report, [])
    before_notices = markdown.split("## Notices")[0]
    assert "test_mean_score" not in before_notices and "reward (higher is better)" in markdown
    ranking = _table(markdown, "Ranking")
    column = ranking[0].index("reward (higher is better)")
    assert [row[column] for row in ranking[2:]] == ["0.9891", "0.9890", "0.9881", "0.9872"], ranking
    assert "ranked by reward, highest first" in markdown and "mean reward 0.9886 ± " in markdown


def test_suggests_best_line_shows_the_metric_as_written(tmp_path):
    from imf.suggest import render_text as suggest_text, suggest

    first = suggest_text(suggest(_program_sweep(tmp_path, MSE, "val_mse", "minimize"))).splitlines()[0]
    assert first.startswith("best cell toy-lr0.1: val_mse 0.0114 ± "), first


def test_suggest_loop_and_sweep_words_print_a_programs_metric_as_written_and_imfs_score_as_today():
    from imf.report.metric_terms import IMF, Terms, summary_terms
    low = Terms("val_mse", "minimize")
    assert low.pm(-0.0114, 0.0005) == "val_mse 0.0114 ± 0.0005" and IMF.pm(0.8, 0.02) == "0.8000 ± 0.0200"
    assert low.within(-0.012, -0.010) == "val_mse within 0.010..0.012" and IMF.within(0.5, 0.7) == "within 0.500..0.700"
    assert low.gap(-0.002, 0.001) == "val_mse 0.002 ± 0.001 higher" and low.gap(0.002, None, named=False) == "0.002 lower"
    assert IMF.gap(0.05, 0.01) == "+0.050 ± 0.010" and IMF.gap(-0.05, None) == "-0.050"
    assert (low.better, IMF.better, Terms("reward").better, low.what, IMF.what) == ("lower", "higher", "higher", "val_mse", "score")
    assert summary_terms({"name": "val_mse", "goal": "minimize", "value": 0.01}) == low
    assert summary_terms(None) == IMF and summary_terms({"name": "x"}) == IMF
