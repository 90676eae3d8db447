"""Cells over seeds, the last-K score and the selection-seed column, worked out by hand."""
from __future__ import annotations

import json

import pytest
from _report_runs import make_run

from imf.report import build_report, render_text
from imf.report.render import cell_rows

CONFIG = {"policy": {"mask": "full", "n_emb": 128, "n_layer": 6}, "training": {"lr": 1e-4}}


def _config(seed: int, lr: float = 1e-4, device: str = "cpu") -> dict:
    return {**CONFIG, "training": {"seed": seed, "lr": lr, "device": device}}


def test_trials_differing_only_in_seed_form_one_cell(tmp_path):
    # ids do not name the seed: the config does; the device is where it ran, not what it learned
    make_run(tmp_path, "run-a", [0.5, 0.6], n_emb=128, n_layer=6, config=_config(1, device="cuda:0"))
    make_run(tmp_path, "run-b", [0.7], n_emb=128, n_layer=6, config=_config(2), spread=0.1)
    make_run(tmp_path, "run-c", [0.8], n_emb=128, n_layer=6, config=_config(3))
    make_run(tmp_path, "run-d", [0.9], n_emb=128, n_layer=6, config=_config(1, lr=3e-4))
    report = build_report([tmp_path])
    cells = {c.label: c for c in report.trends.cells}
    assert sorted(cells) == ["run-a", "run-d"]
    seeds = cells["run-a"]
    # 0.6, 0.7, 0.8: mean 0.7, sample sd 0.1, SE 0.1 / sqrt(3), min..max 0.6..0.8
    assert (seeds.trials, seeds.seeds, seeds.n) == (["run-a", "run-b", "run-c"], [1, 2, 3], 3)
    assert seeds.mean == pytest.approx(0.7) and seeds.sd == pytest.approx(0.1)
    assert seeds.se == pytest.approx(0.1 / 3 ** 0.5) and seeds.noise == "seeds"
    assert (seeds.low, seeds.high) == (0.6, 0.8)
    assert seeds.params == {"training.lr": 1e-4} and cells["run-d"].params == {"training.lr": 3e-4}
    assert cells["run-d"].sd is None and cells["run-d"].noise == "unknown"
    assert {t.id: t.cell for t in report.trials}["run-b"] == "run-a"
    assert {t.id: t.seed for t in report.trials} == {"run-a": 1, "run-b": 2, "run-c": 3, "run-d": 1}
    text = render_text(report)
    assert "0.7000 ± 0.1000  0.6000..0.8000  0.0577 (seeds)" in text  # ".." reads right for negative scores too


def test_an_unreadable_config_is_a_notice(tmp_path):
    make_run(tmp_path, "sw-full-e64-l2-s1", [0.5], config=_config(1))
    bad = make_run(tmp_path, "sw-full-e64-l2-s2", [0.6])
    (bad / "config.yaml").write_text("policy: [unclosed\n")
    report = build_report([tmp_path])
    assert report.notices == [f"ignored {bad / 'config.yaml'}: not a YAML mapping of settings; "
                              "its cell is taken from the trial id"]


def test_many_varying_settings_share_one_column(tmp_path):
    for k, lr in enumerate((1e-4, 2e-4)):
        config = {**CONFIG, "training": {"seed": 1, "lr": lr, "batch_size": 32 + k, "epochs": 3 + k,
                                         "warmup": 10 + k}}
        make_run(tmp_path, f"r{k}", [0.5], config=config)
    headers, rows = cell_rows(build_report([tmp_path]))
    assert headers[3] == "settings" and rows[0][3] == ("training.batch_size=32, training.epochs=3, "
                                                       "training.lr=0.0001, training.warmup=10")


def test_sweep_ids_with_seed_suffix_group_without_configs(tmp_path):
    for seed, score in ((42, 0.5), (43, 0.7)):
        make_run(tmp_path, f"sw-full-e64-l2-s{seed}", [score], spread=0.05)
    make_run(tmp_path, "sw-full-e64-l4-s42", [0.6], spread=0.05)
    cells = {c.label: c for c in build_report([tmp_path]).trends.cells}
    assert sorted(cells) == ["sw-full-e64-l2", "sw-full-e64-l4"]
    assert cells["sw-full-e64-l2"].seeds == [42, 43] and cells["sw-full-e64-l2"].n == 2
    assert cells["sw-full-e64-l4"].noise == "episodes" and cells["sw-full-e64-l4"].se == pytest.approx(0.05)


def test_seeds_that_agree_by_luck_keep_the_episode_noise(tmp_path):
    _final_eval(make_run(tmp_path, "sw-e64-l2-s1", [0.50], spread=0.06), 0.30, 0.05)
    _final_eval(make_run(tmp_path, "sw-e64-l2-s2", [0.51], spread=0.08), 0.31, 0.05)
    cell = build_report([tmp_path], rank_by="max").trends.cells[0]
    # over seeds: sd 0.00707, SE 0.005; the episodes: sqrt(0.06² + 0.08²) / 2 = 0.05
    assert cell.sd == pytest.approx(0.5 ** 0.5 / 100)
    assert (cell.se, cell.noise) == (pytest.approx(0.05), "episodes")
    # selection: over seeds 0.005, the episodes sqrt(2 * 0.05²) / 2 = 0.0354
    assert (cell.selection, cell.selection_se, cell.selection_n) == (pytest.approx(0.305), pytest.approx(0.0354, abs=1e-4), 2)


def test_last_k_mean_and_its_noise(tmp_path):
    make_run(tmp_path, "long", [0.2, 0.9, 0.5, 0.6, 0.7], spread=0.04)
    make_run(tmp_path, "short", [None, 0.4], n_emb=64, n_layer=2)
    by_id = {t.id: t for t in build_report([tmp_path]).trials}
    long = by_id["long"]
    assert (long.best_score, long.last_k, long.last_k_n, long.rollouts) == (0.9, pytest.approx(0.6), 3, 5)
    assert long.last_k_se == pytest.approx(0.04)  # the rollouts share seeds: the mean of their SEs
    short = by_id["short"]
    assert (short.last_k, short.last_k_n, short.last_k_se) == (0.4, 1, None)
    assert build_report([tmp_path], last_k=1).trials[0].last_k == pytest.approx(0.7)


def _final_eval(run, mean, se, per_seed=None):
    data = {"checkpoint": "checkpoints/best.pt", "episodes": 200, "seed_start": 500000,
            "mean": mean, "se": se, "per_seed": per_seed or []}
    (run / "final_eval.json").write_text(json.dumps(data))


def test_selection_seed_column_and_disagreement(tmp_path):
    lucky = make_run(tmp_path, "lucky", [0.9], spread=0.05)
    steady = make_run(tmp_path, "steady", [0.8], spread=0.05)
    third = make_run(tmp_path, "third", [0.6], spread=0.05)
    _final_eval(lucky, 0.55, 0.02)
    _final_eval(steady, 0.70, 0.02)
    _final_eval(third, 0.50, None, per_seed=[0.4, 0.6])  # SE from per_seed: 0.1
    report = build_report([tmp_path])
    by_id = {t.id: t for t in report.trials}
    assert (by_id["lucky"].selection, by_id["lucky"].selection_se, by_id["lucky"].selection_episodes) == (0.55, 0.02, 200)
    assert by_id["third"].selection_se == pytest.approx(0.1)
    # by max: lucky, steady, third; selection: steady, lucky, third -> one pair of three swapped;
    # 0.70 - 0.55 = 0.15 > 1.96 * hypot(0.02, 0.02) = 0.055: beyond noise
    assert report.trends.selection == (
        "max and selection-seed rankings disagree: best by max is lucky (selection 0.5500 ± 0.0200), best "
        "on selection seeds is steady (selection 0.7000 ± 0.0200); the selection-seed gap is beyond noise; "
        "1 of 3 pair(s) ordered differently")
    assert "0.7000 ± 0.0200 (200 ep)" in render_text(report)
    # one cell each; a cell's selection SE is the trial's, or its episodes' when over seeds is less
    assert [c.selection_se for c in report.trends.cells] == [0.02, 0.02, pytest.approx(0.1)]


def test_rankings_that_agree_and_a_bad_final_eval(tmp_path):
    a = make_run(tmp_path, "a", [0.9])
    b = make_run(tmp_path, "b", [0.8])
    c = make_run(tmp_path, "c", [0.7])
    _final_eval(a, 0.8, 0.02)
    _final_eval(b, 0.6, 0.02)
    (c / "final_eval.json").write_text('{"mean": "high"}')
    report = build_report([tmp_path])
    assert report.trends.selection == ("max and selection-seed rankings agree on the best of the 2 trials "
                                   "scored on selection seeds (a) and order every pair alike")
    assert f"ignored {c / 'final_eval.json'}: no number under 'mean'" in report.notices
