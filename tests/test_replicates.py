"""Replicates are honest: a cell is its config without the seed plus the warm start; the same seed
again counts once; suggest never proposes a run that exists."""
from __future__ import annotations

from imf.report import build_report
from imf.suggest import suggest
from _suggest_runs import make_run


def cells(folder):
    return {c.label: c for c in build_report([folder]).trends.cells}


def test_a_warm_started_run_is_its_own_cell_not_another_seed_of_its_parent(tmp_path):
    parent = make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.5] * 6)
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.7] * 6, tid="child",
             init_from=str(parent / "checkpoints" / "best.pt"))
    found = cells(tmp_path)
    assert len(found) == 2
    assert sorted(c.n for c in found.values()) == [1, 1]
    assert sorted(tuple(c.seeds) for c in found.values()) == [(42,), (42,)]


def test_the_same_seed_again_is_counted_once_and_flagged(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, seed=42, scores=[0.8] * 6, tid="a-s42")
    make_run(tmp_path, n_emb=128, n_layer=6, seed=42, scores=[0.2] * 6, tid="b-s42")
    make_run(tmp_path, n_emb=128, n_layer=6, seed=42, scores=[0.5] * 6, tid="c-s42")
    (cell,) = cells(tmp_path).values()
    assert cell.n == 1 and cell.mean == 0.8  # the first by id stands for seed 42
    assert cell.duplicates == ["b-s42", "c-s42"]
    assert cell.noise == "episodes"  # one seed: no spread over seeds to claim


def test_suggest_counts_distinct_seeds_and_never_proposes_a_run_that_exists(tmp_path):
    for tid in ("x-s42", "y-s42", "z-s42"):
        make_run(tmp_path, n_emb=128, n_layer=6, seed=42, scores=[0.8] * 6, se=0.05, tid=tid)
    make_run(tmp_path, n_emb=256, n_layer=6, seed=42, scores=[0.78] * 6, se=0.05)
    make_run(tmp_path, n_emb=256, n_layer=6, seed=43, scores=[0.78] * 6, se=0.05, tid="by-hand-s43")
    found = suggest(tmp_path)
    seeds = sorted((p.id, p.seed) for p in found.proposals if p.kind == "seeds")
    assert all(not pid.endswith(("-2", "-3")) for pid, _ in seeds), seeds
    # 256x6 ran seeds 42 and 43 (one by hand, under another id): new seeds start at 44
    assert [s for pid, s in seeds if "e256" in pid] == [44, 45]
    best = next(c for c in build_report([tmp_path]).trends.cells if c.n_emb == 128)
    assert best.n == 1 and len(best.duplicates) == 2


def test_a_proposal_that_is_an_existing_run_under_another_id_is_dropped(tmp_path, monkeypatch):
    import imf.suggest.rules as rules
    make_run(tmp_path, n_emb=128, n_layer=6, seed=42, scores=[0.8] * 6, se=0.05)
    make_run(tmp_path, n_emb=256, n_layer=6, seed=42, scores=[0.78] * 6, se=0.05)
    make_run(tmp_path, n_emb=256, n_layer=6, seed=43, scores=[0.78] * 6, se=0.05, tid="by-hand")
    # a rule that offers a seed already run and forgets to check it: propose() still refuses
    monkeypatch.setattr(rules, "_seed_pool", lambda ctx, used, count: [43])
    monkeypatch.setattr(rules.Tried, "has", lambda self, *a, **k: False)
    found = suggest(tmp_path)
    assert not [p for p in found.proposals if p.kind == "seeds" and "e256" in p.id and p.seed == 43]
    assert any("by-hand is that run already" in n for n in found.notes), found.notes
