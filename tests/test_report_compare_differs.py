"""`imf report A B`'s header names every setting the sweeps differ in (beyond the grid axes and
the seed) with each side's value, and each cell's verdict rests on all of its seeds: its z, "a
tie" within 1.96 SE, a note where the two sides' seeds are not the same."""
from __future__ import annotations

import pytest
from _report_runs import make_run

from imf.report import build_comparison, render_compare_text

SEED_OFFSETS = {42: -0.02, 43: 0.02}  # sd over the two seeds 0.0283, SE of a cell 0.02


def make_sweep(root, name: str, gain: float, policy: dict, seeds=(42, 43), **extra) -> str:
    """Two cells (n_layer 1 and 2) of n_emb 32, one trial a seed; ``policy`` is held fixed."""
    sweep = root / name
    for layer in (1, 2):
        for seed in seeds:
            score = 0.4 + SEED_OFFSETS[seed] + gain
            config = {"policy": {**policy, "n_emb": 32, "n_layer": layer},
                      "training": {"seed": seed, "lr": 1e-4}, **extra}
            make_run(sweep, f"{name}-{policy['mask']}-e32-l{layer}-s{seed}", [score - 0.1, score],
                     n_emb=32, n_layer=layer, config=config)
    return sweep


def test_the_header_names_every_setting_that_moved_and_warns_when_more_than_the_mask_did(tmp_path):
    full = make_sweep(tmp_path, "full", 0.0, {"mask": "full", "n_head": 1})
    causal = make_sweep(tmp_path, "causal", 0.0, {"mask": "causal", "n_head": 4})
    comparison = build_comparison(full, causal)
    assert comparison.differs == {"policy.mask": ["full", "causal"], "policy.n_head": [1, 4]}
    text = render_compare_text(comparison).splitlines()
    assert text[1] == ("differs (A | B, beyond the grid axes and the seed): policy.mask full | causal; "
                       "policy.n_head 1 | 4")
    assert "note: the sweeps differ in 2 settings (policy.mask, policy.n_head): each cell's difference " \
           "is the effect of all of them together, not of one" in text
    assert (comparison.name_a, comparison.name_b) == ("full", "causal")  # the folders: two settings moved


def test_only_the_mask_moved_says_so_and_a_setting_one_side_lacks_is_named(tmp_path):
    a = make_sweep(tmp_path, "a", 0.0, {"mask": "causal", "n_head": 4})
    b = make_sweep(tmp_path, "b", 0.0, {"mask": "full", "n_head": 4})
    comparison = build_comparison(a, b)
    assert render_compare_text(comparison).splitlines()[1] == (
        "differs (A | B, beyond the grid axes and the seed): policy.mask causal | full")
    assert not any("settings" in n for n in comparison.notes)
    c = make_sweep(tmp_path, "c", 0.0, {"mask": "full", "n_head": 4}, data={"curriculum": "doubling"})
    line = render_compare_text(build_comparison(b, c)).splitlines()[1]
    assert line.endswith(": data.curriculum (not set) | doubling")
    same = render_compare_text(build_comparison(b, make_sweep(tmp_path, "d", 0.0, {"mask": "full", "n_head": 4})))
    assert same.splitlines()[1].endswith(": nothing")


def test_each_cell_is_judged_on_both_seeds_a_tie_within_noise(tmp_path):
    a = make_sweep(tmp_path, "a", 0.0, {"mask": "causal", "n_head": 4})
    b = make_sweep(tmp_path, "b", 0.05, {"mask": "full", "n_head": 4})
    comparison = build_comparison(a, b)
    se = (2 * 0.02 ** 2) ** 0.5  # each side's cell SE is the spread of its two seeds
    for cell in comparison.cells:
        assert cell["n_a"] == cell["n_b"] == 2 and cell["seeds_a"] == cell["seeds_b"] == [42, 43]
        assert cell["diff"] == pytest.approx(0.05) and cell["se"] == pytest.approx(se)
        assert cell["z"] == pytest.approx(0.05 / se)  # 1.77: within 1.96
        assert cell["verdict"] == "a tie" and cell["clear"] is False
    rows = [line for line in render_compare_text(comparison).splitlines() if line.startswith("32 ")]
    assert len(rows) == 2 and all("+1.77" in r and "a tie" in r for r in rows)
    beyond = build_comparison(a, make_sweep(tmp_path, "c", 0.08, {"mask": "full", "n_head": 4}))
    assert [c["verdict"] for c in beyond.cells] == ["full better"] * 2  # z 2.83


def test_a_cell_whose_sides_rest_on_different_seeds_gets_a_note(tmp_path):
    a = make_sweep(tmp_path, "a", 0.0, {"mask": "causal", "n_head": 4})
    b = make_sweep(tmp_path, "b", 0.0, {"mask": "full", "n_head": 4}, seeds=(42,))
    comparison = build_comparison(a, b)
    assert [(c["seeds_a"], c["seeds_b"]) for c in comparison.cells] == [([42, 43], [42])] * 2
    assert ("n_emb 32 x n_layer 1: A's mean is over seeds 42, 43, B's over 42; its verdict compares "
            "different seeds") in comparison.notes
