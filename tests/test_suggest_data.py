"""``imf suggest``'s data rules on planted run folders whose right answer is known: more data
for a best run that overfits, a curriculum for a best cell that diverged or stalled; and the
curve tests they stand on (imf/suggest/signals.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imf.cli import app
from imf.report.model import Curve
from imf.suggest import suggest
from imf.suggest.signals import epoch_noise, overfitting, rise_from_low, stalled
from _suggest_runs import make_run

runner = CliRunner()

# 12 epochs: the score rose, then held (neither rising at the end nor stalled early)
PLATEAU = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]
TRAIN = [0.5 - 0.02 * e for e in range(12)]
VAL_U = [0.60, 0.56, 0.53, 0.51, 0.50, 0.495, 0.50, 0.51, 0.52, 0.535, 0.55, 0.565]  # lowest at 5-7
OVERFIT = list(zip(TRAIN, VAL_U))


def curve(scores=(), train=(), val=(), se=0.01) -> Curve:
    return Curve("t", None, rollouts=[[i + 1, s, se] for i, s in enumerate(scores)],
                 val_loss=[[i + 1, v] for i, v in enumerate(val)],
                 train_loss=[[i + 1, t] for i, t in enumerate(train)])


def of_kind(found, kind: str) -> list:
    return [p for p in found.proposals if p.kind == kind]


# the curve tests ---------------------------------------------------------------
def test_epoch_noise_is_the_spread_of_the_changes_so_a_steady_trend_has_none():
    assert epoch_noise([0.5 - 0.02 * e for e in range(8)]) == pytest.approx(0.0, abs=1e-12)
    wiggle = [0.5, 0.52, 0.5, 0.52, 0.5, 0.52]  # changes +-0.02: sd 0.0219, / sqrt(2)
    assert epoch_noise(wiggle) == pytest.approx(0.02191 / 2 ** 0.5, rel=1e-3)


def test_the_rise_is_the_last_window_against_the_lowest_earlier_one():
    shift = rise_from_low(list(enumerate(VAL_U, start=1)))
    assert shift.low == (5, 7) and shift.last == (10, 12)
    assert shift.change == pytest.approx((0.535 + 0.55 + 0.565) / 3 - (0.50 + 0.495 + 0.50) / 3)
    assert shift.clear
    assert rise_from_low(list(enumerate(VAL_U[:5]))) is None  # fewer than 2 x 3 epochs


def test_val_loss_rising_while_train_loss_falls_is_overfitting():
    yes, words = overfitting(curve(PLATEAU, TRAIN, VAL_U))
    assert yes and words.startswith("val_loss +0.0517 ± 0.0") and "(5-7) to its last 3 (10-12)" in words
    assert words.endswith("while train_loss fell 0.1000 ± 0.0000")


RISING = [0.05 * (i + 1) for i in range(12)]  # still rising at its end: the gap test is off


@pytest.mark.parametrize("train, val, why", [
    (TRAIN, [t + 0.1 for t in TRAIN], "val_loss falls with train_loss"),
    ([0.3] * 12, VAL_U, "val_loss rises but train_loss does not fall"),
    (TRAIN, [0.5, 0.56] * 6, "a rise of 0.02 within the wiggle of 0.06"),
])
def test_a_rising_val_loss_needs_a_falling_train_loss_both_beyond_noise(train, val, why):
    yes, words = overfitting(curve(RISING, train, val))
    assert not yes, why
    assert words.startswith("val_loss ") and "val_loss - train_loss" in words


def test_a_widening_gap_overfits_only_once_the_score_stopped_rising():
    train = [0.5 - 0.04 * e for e in range(12)]
    flat_val = [0.6] * 12  # val_loss never rises: only the gap says it
    yes, words = overfitting(curve(PLATEAU, train, flat_val))
    assert yes and words.startswith("its test score stopped rising (mean of the last 3 rollouts")
    assert words.endswith("val_loss - train_loss +0.3600 ± 0.0000 from its narrowest 3 epochs (1-3) "
                          "to its last 3 (10-12)")
    parallel = [t + 0.1 for t in train]  # the gap holds: no overfitting, the score's plateau aside
    assert not overfitting(curve(PLATEAU, train, parallel))[0]
    assert not overfitting(curve([0.05 * i for i in range(12)], train, flat_val))[0]  # still rising
    assert not overfitting(curve(PLATEAU[:4], train[:4] * 3, flat_val))[0]  # 4 rollouts: unknown


def test_overfitting_needs_six_epochs_of_both_losses():
    yes, words = overfitting(curve(PLATEAU, TRAIN[:5], VAL_U))
    assert not yes and words == "5 epoch(s) with train and val loss, fewer than the 6 the test needs"


def test_the_mse_is_read_before_the_loss_when_it_was_logged():
    flat_loss = curve(PLATEAU, [1.0] * 12, [1.0] * 12)  # imf's adaptive-weighted loss: about 1
    flat_loss.train_mse = [[i + 1, t] for i, t in enumerate(TRAIN)]
    flat_loss.val_mse = [[i + 1, v] for i, v in enumerate(VAL_U)]
    yes, words = overfitting(flat_loss)
    assert yes and words.startswith("val_mse +0.0517 ± ") and "while train_mse fell 0.1000" in words
    flat_loss.val_mse = flat_loss.val_mse[:5]  # too few epochs of it: the loss decides
    yes, words = overfitting(flat_loss)
    assert not yes and words.startswith("val_loss +0.0000 ± 0.0000")


@pytest.mark.parametrize("scores, expected", [
    ([0.3, 0.6, 0.5, 0.4, 0.45, 0.4], True),  # peaked at epoch 2
    ([0.5] * 6, True),  # flat from the start
    ([0.5, 0.5, 0.52, 0.5, 0.51, 0.52], True),  # a gain within noise
    ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], False),
    (PLATEAU, False),
])
def test_a_stall_is_nothing_after_the_first_third_beating_its_best(scores, expected):
    assert stalled(curve(scores))[0] is expected
    if not expected:
        assert "is above the best of its first third" in stalled(curve(scores))[1]


def test_the_stall_test_needs_six_rollouts():
    assert stalled(curve([0.5] * 5)) == (False, "5 rollout(s), fewer than the 6 the stall test needs")


# more data ---------------------------------------------------------------------
def test_an_overfitting_best_run_gets_a_warm_start_on_twice_the_demonstrations(tmp_path):
    run = make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT)
    make_run(tmp_path, n_emb=32, n_layer=2, scores=[0.3] * 12)
    [proposal] = of_kind(suggest(tmp_path), "more-data")
    assert proposal.id == "smoke-causal-e64-l2-s42-demos16" and proposal.settings == {"data.demo_episodes": 16}
    argv = proposal.argv
    assert argv[3] == "data.demo_episodes=16" and argv[argv.index("--seed") + 1] == "42"
    assert argv[argv.index("--init-from") + 1] == str(run / "checkpoints" / "best.pt")
    assert proposal.reason.startswith("smoke-causal-e64-l2-s42 overfits (val_loss +0.0517 ± 0.0")
    assert proposal.reason.endswith("; warm start of its best.pt on 16 demonstrations (2 x 8)")


def test_the_command_line_prints_the_more_data_proposal_and_its_reason(tmp_path):
    make_run(tmp_path / "runs", n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT)
    result = runner.invoke(app, ["suggest", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    heading = next(line for line in result.output.splitlines() if "more-data:" in line)
    assert heading.startswith("1. more-data: smoke-causal-e64-l2-s42 overfits (val_loss +0.0517")
    assert "train_loss fell 0.1000" in heading and heading.endswith("on 16 demonstrations (2 x 8)")
    assert (f"data.demo_episodes=16 --init-from {tmp_path}/runs/smoke-causal-e64-l2-s42/checkpoints/best.pt "
            "--seed 42 --id smoke-causal-e64-l2-s42-demos16") in result.output
    listed = runner.invoke(app, ["suggest", str(tmp_path / "runs"), "--json"])
    rows = [r for r in json.loads(listed.output) if r["kind"] == "more-data"]
    assert [r["changes"] for r in rows] == [{"data.demo_episodes": 16}]


def test_a_best_run_that_does_not_overfit_gets_no_more_data_and_a_note_why(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=[(t, t + 0.1) for t in TRAIN])
    found = suggest(tmp_path)
    assert not of_kind(found, "more-data")
    assert any(n.startswith("no more data for smoke-causal-e64-l2-s42: it does not overfit (val_loss -0.0600")
               for n in found.notes), found.notes
    result = runner.invoke(app, ["suggest", str(tmp_path)])
    assert result.exit_code == 0 and "more-data" not in result.output


def test_a_cap_that_left_episodes_out_is_raised_before_demonstrations_are_made(tmp_path):
    # 40 demos, 8 of them validation: a cap of 10 left 22 out, so 20 need no new demos
    make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT, tid="capped",
             extra=("data.demo_episodes=40", "data.max_train_episodes=10"))
    [proposal] = of_kind(suggest(tmp_path), "more-data")
    assert proposal.settings == {"data.max_train_episodes": 20} and proposal.id == "capped-episodes20"
    assert proposal.reason.endswith("on 20 of its data set's 32 training episodes (2 x 10)")


def test_a_cap_on_all_the_demonstrations_doubles_with_them(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT, tid="capped",
             extra=("data.demo_episodes=10", "data.max_train_episodes=7"))
    [proposal] = of_kind(suggest(tmp_path), "more-data")
    assert proposal.settings == {"data.demo_episodes": 20, "data.max_train_episodes": 14}


@pytest.mark.parametrize("episodes, settings, words", [
    (100, {"data.max_train_episodes": 40}, "on 40 of its data set's 80 training episodes (2 x 20)"),
    (30, {"data.max_train_episodes": 24}, "on all 24 training episodes of /data/pusht.zarr (fewer than 2 x 20)"),
])
def test_a_user_data_set_gives_its_unused_training_episodes(tmp_path, episodes, settings, words):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT, data_set=episodes,
             extra=("data.path=/data/pusht.zarr", "data.max_train_episodes=20"))
    [proposal] = of_kind(suggest(tmp_path), "more-data")
    assert proposal.settings == settings and proposal.reason.endswith(words)


def test_a_user_data_set_used_in_full_gets_a_note_that_there_is_no_more_data(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT, data_set=25,
             extra=("data.path=/data/pusht.zarr", "data.max_train_episodes=null"))
    found = suggest(tmp_path)
    assert not of_kind(found, "more-data")
    assert ("no more data for smoke-causal-e64-l2-s42: /data/pusht.zarr has no training episodes beyond "
            "the 20 it used") in found.notes


def test_a_run_whose_summary_has_no_data_record_gets_a_note(tmp_path):
    run = make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT)
    summary = json.loads((run / "summary.json").read_text())
    del summary["data"]
    (run / "summary.json").write_text(json.dumps(summary))
    found = suggest(tmp_path)
    assert not of_kind(found, "more-data")
    assert ("no more data for smoke-causal-e64-l2-s42: its summary.json does not record its data "
            "(a run of an older imf)") in found.notes


def test_a_doubling_that_ran_is_not_proposed_again(tmp_path):
    run = make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT)
    # run by hand and still without a score: the same warm start on the same data
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[], tid="by-hand", extra=("data.demo_episodes=16",),
             init_from=str(run / "checkpoints" / "best.pt"), status="running")
    found = suggest(tmp_path)
    assert not of_kind(found, "more-data")
    assert ("more data for smoke-causal-e64-l2-s42 already tried (a warm start of its best.pt with "
            "data.demo_episodes=16)") in found.notes


# curriculum --------------------------------------------------------------------
def test_a_stalled_best_run_gets_a_curriculum(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.3, 0.6, 0.5, 0.4, 0.45, 0.4])
    [proposal] = of_kind(suggest(tmp_path), "curriculum")
    assert proposal.settings == {"data.curriculum": "easy_first"} and proposal.seed == 42
    assert proposal.id == "smoke-causal-e64-l2-s42-easy_first" and "data.curriculum=easy_first" in proposal.argv
    assert "--init-from" not in proposal.argv
    assert proposal.reason.startswith("the best run smoke-causal-e64-l2-s42 stalled early: the mean of its "
                                      "last 3 rollouts 0.4167 ± 0.0100 is not above the best of its first "
                                      "third of epochs 0.6000 ± 0.0100 (epoch 2) beyond noise")


def test_a_diverged_run_of_the_best_cell_gets_a_curriculum(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU)
    make_run(tmp_path, n_emb=64, n_layer=2, seed=43, scores=[0.2, 0.3], status="diverged")
    found = suggest(tmp_path)
    [proposal] = of_kind(found, "curriculum")
    assert proposal.reason.startswith("1 run(s) of the best cell smoke-causal-e64-l2 diverged "
                                      "(smoke-causal-e64-l2-s43)")
    result = runner.invoke(app, ["suggest", str(tmp_path)])
    assert result.exit_code == 0 and "curriculum: 1 run(s) of the best cell" in result.output


def test_a_best_cell_that_learned_gets_no_curriculum(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=PLATEAU)
    found = suggest(tmp_path)
    assert not of_kind(found, "curriculum")
    assert any(n.startswith("no curriculum for smoke-causal-e64-l2: no run of it diverged and "
                            "smoke-causal-e64-l2-s42 did not stall (the mean of its last 3") for n in found.notes)


@pytest.mark.parametrize("tried", [("data.curriculum=easy_first",),
                                   ("data.curriculum=doubling", "data.curriculum_options.at_epochs=[2, 4]")])
def test_a_curriculum_tried_for_the_cell_is_not_proposed_again(tmp_path, tried):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.5] * 6)
    make_run(tmp_path, n_emb=64, n_layer=2, seed=7, scores=[0.4] * 6, tid="with-curriculum", extra=tried)
    found = suggest(tmp_path)
    assert found.best["label"].endswith("smoke-causal-e64-l2")
    assert not of_kind(found, "curriculum")
    assert any(n.startswith("a curriculum was already tried for the best cell ") and n.endswith("(with-curriculum)")
               for n in found.notes), found.notes


def test_a_curriculum_of_another_cell_does_not_count(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.5] * 6)
    make_run(tmp_path, n_emb=32, n_layer=2, scores=[0.3] * 6, extra=("data.curriculum=easy_first",))
    assert len(of_kind(suggest(tmp_path), "curriculum")) == 1


def test_a_best_run_on_a_curriculum_already_is_its_own_try(tmp_path):
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.5] * 6, tid="on-one", extra=("data.curriculum=easy_first",))
    found = suggest(tmp_path)
    assert not of_kind(found, "curriculum")
    assert any(n.endswith("(on-one)") for n in found.notes)


def test_a_scoreboard_record_of_a_curriculum_run_counts(tmp_path):
    from imf.store.scoreboard import ScoreboardStore
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.5] * 6)
    ScoreboardStore(tmp_path).record({
        "id": "gone", "overrides": ["data.curriculum=easy_first", "training.seed=9"], "score": 0.2,
        "status": "completed", "config": {"mask": "causal", "n_emb": 64, "n_layer": 2},
        "run_dir": str(tmp_path / "moved-away")})
    found = suggest(tmp_path)
    assert not of_kind(found, "curriculum") and any(n.endswith("(gone)") for n in found.notes)


def test_a_data_axis_gets_no_neighbour_below_one_demonstration(tmp_path):
    # a doubling run makes data.demo_episodes an axis; one step below 8 of (8, 16) would be 0
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.6] * 6)
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.4] * 6, tid="more", extra=("data.demo_episodes=16",))
    found = suggest(tmp_path)
    assert found.best["trial"] == "smoke-causal-e64-l2-s42"
    assert not [p for p in found.proposals if "data.demo_episodes" in p.settings]


def test_seeds_of_a_warm_started_run_start_from_its_checkpoint(tmp_path):
    base = make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.6] * 6, se=0.05)
    best_pt = base / "checkpoints" / "best.pt"
    make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.62] * 6, se=0.05, tid="doubled",
             extra=("data.demo_episodes=16",), init_from=str(best_pt))
    found = suggest(tmp_path)
    assert found.best["trial"] == "doubled"  # tied with the base: both cells get seeds
    seeds = [p for p in found.proposals if p.kind == "seeds"]
    warm = [p for p in seeds if p.argv[2].endswith("doubled/config.yaml")]
    cold = [p for p in seeds if p not in warm]
    assert len(warm) == len(cold) == 2 and all("--init-from" not in p.argv for p in cold)
    assert all(p.argv[p.argv.index("--init-from") + 1] == str(best_pt) for p in warm)
    assert warm[0].reason.endswith(f"each a warm start of {best_pt} as its run was")
    assert any("the doubling stopped paying" in n for n in found.notes)  # +0.02 ± 0.07: within noise
