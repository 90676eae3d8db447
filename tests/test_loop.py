"""``imf loop``: rounds planned from imf suggest, logged, concluded against the best (synthetic
run folders whose right answer is known); stopping rules; bad inputs; loop.json."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _suggest_runs import make_run

from imf.config import load_config
from imf.errors import ImfError, LoopError
from imf.store.iteration_log import IterationLogStore
from imf.suggest import suggest
from imf.loop.loop import (LoopRequest, check_request, conclude_round, dry_run, log_round_hypothesis,
                           plan_round, render_round, start_loop, stop_reason)
from imf.loop.state import LOOP_FILE, LoopState, Outcome, Round, load_loop, save_loop


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "exp"
    make_run(folder, n_emb=64, n_layer=2, scores=[0.6] * 6, se=0.01)  # flat: no continuation
    make_run(folder, n_emb=32, n_layer=2, scores=[0.4] * 6, se=0.01)
    return folder


def _state(**kw) -> LoopState:
    return LoopState(["local:cpu"], kw.pop("rounds_max", 3), kw.pop("per_round", 2),
                     started_unix=time.time(), **kw)


def test_a_round_takes_the_top_proposals_and_logs_one_block_for_them(tmp_path):
    folder = _folder(tmp_path)
    current = plan_round(folder, _state(per_round=2))
    assert current is not None and current.number == 1 and current.sweep == "loop-r01"
    assert len(current.proposals) == 2 and current.best_before["label"].endswith("e64-l2")
    for p in current.proposals:
        assert Path(p.config).is_absolute() and p.config.endswith("config.yaml") and p.reason
    first = log_round_hypothesis(folder, current)
    assert log_round_hypothesis(folder, current) == first  # a loop killed after writing it: reused
    blocks = IterationLogStore(folder).hypotheses()
    assert [b["id"] for b in blocks] == [first]
    assert blocks[0]["hypothesis"].startswith("imf loop round 1 (loop-r01)")
    assert "within 0.5" in blocks[0]["expectation"] and "1.96 SE" in blocks[0]["expectation"]
    assert all(f"--out {folder / 'loop-r01' / p.id}" in blocks[0]["command"] for p in current.proposals)


def _conclude(folder: Path, current: Round, scores: dict[str, float]) -> Round:
    current.hypothesis = log_round_hypothesis(folder, current)
    for p in current.proposals:  # each run as the round's sweep would have left it
        policy = load_config(p.config, p.overrides).policy
        make_run(folder / current.sweep, n_emb=policy.n_emb, n_layer=policy.n_layer, tid=p.id,
                 scores=[scores[p.id]] * 6, se=0.01)
    conclude_round(folder, current)
    return current


def test_a_round_concludes_each_run_against_the_best_before_it(tmp_path):
    folder = _folder(tmp_path)
    current = plan_round(folder, _state(per_round=2))
    better, tie = (p.id for p in current.proposals)
    _conclude(folder, current, {better: 0.7, tie: 0.605})
    verdicts = {o.id: o.verdict for o in current.outcomes}
    assert verdicts == {better: "better", tie: "no clear difference"}
    gain = next(o for o in current.outcomes if o.id == better)
    assert gain.diff == pytest.approx(0.1) and gain.diff_se == pytest.approx(0.01 * 2 ** 0.5)
    assert current.gain and current.status == "concluded"
    assert current.best_after["trial"].endswith(better) and current.best_after["mean"] == pytest.approx(0.7)
    block = IterationLogStore(folder).hypotheses()[0]
    assert f"{better}: 0.7000 ± 0.0100" in block["result"] and "+0.100 ± 0.014" in block["result"]
    assert f"{better}: better" in block["conclusion"] and "the best is now" in block["conclusion"]
    assert "compared at equal epochs (6)" in block["conclusion"].splitlines()  # same steps: nothing more


def test_a_worse_run_is_worse_and_the_best_stays(tmp_path):
    folder = _folder(tmp_path)
    current = plan_round(folder, _state(per_round=2))
    worse, tie = (p.id for p in current.proposals)
    _conclude(folder, current, {worse: 0.45, tie: 0.59})
    assert {o.id: o.verdict for o in current.outcomes} == {worse: "worse", tie: "no clear difference"}
    assert not current.gain and current.best_after["label"] == current.best_before["label"]
    assert "no gain beyond noise; the best stays" in IterationLogStore(folder).hypotheses()[0]["conclusion"]


def test_what_ran_is_not_proposed_again(tmp_path):
    folder = _folder(tmp_path)
    state = _state(per_round=2)
    state.rounds.append(plan_round(folder, state))
    first = state.rounds[0]
    _conclude(folder, first, {p.id: 0.6 for p in first.proposals})
    second = plan_round(folder, state)
    ran = {(p.config, tuple(p.overrides), p.seed) for p in first.proposals}
    assert second is not None and second.number == 2 and second.sweep == "loop-r02" and second.proposals
    assert not ran & {(p.config, tuple(p.overrides), p.seed) for p in second.proposals}


def _concluded(gain: bool) -> Round:
    return Round(1, "loop-r01", {}, status="concluded", gain=gain)


@pytest.mark.parametrize("rounds,hours,started,words", [
    ([_concluded(True)] * 3, None, 0, "3 round(s) done (--rounds 3)"),
    ([_concluded(True)], 1.0, 3601, "1 hour(s) spent (--hours)"),
    ([_concluded(True), _concluded(False), _concluded(False)], None, 0,
     "two rounds in a row brought no gain beyond noise"),
    ([_concluded(False), _concluded(True)], None, 0, ""),
    ([_concluded(False)], 1.0, 10, ""),
])
def test_the_loop_stops_for_the_first_reason_that_holds(rounds, hours, started, words):
    state = _state(rounds_max=3 if "--rounds" in words else 9, hours=hours)
    state.started_unix, state.rounds = time.time() - started, list(rounds)
    assert stop_reason(state) == words


@pytest.mark.parametrize("change,words", [
    (dict(rounds=0), "--rounds 0: give 1 or more rounds"),
    (dict(per_round=0), "--per-round 0: give 1 or more proposals per round"),
    (dict(hours=-1.0), "--hours -1.0: give a number of hours > 0"),
    (dict(queues=["nowhere"]), "queue spec 'nowhere'"),
    (dict(folder=Path("missing")), "missing is not a folder"),
    (dict(final_eval=0), "--final-eval 0: the number of selection episodes must be an integer from 1"),
])
def test_bad_requests_are_one_error_each(tmp_path, change, words):
    req = LoopRequest(**{"folder": _folder(tmp_path), "queues": ["local:cpu"], "rounds": 2, **change})
    if "folder" in change:
        req.folder = tmp_path / change["folder"]
    with pytest.raises(ImfError, match=words.replace("(", r"\(").replace(")", r"\)")):
        check_request(req)
    assert not (req.folder / LOOP_FILE).exists()


def test_loop_json_round_trips_and_a_damaged_one_is_named(tmp_path):
    folder = _folder(tmp_path)
    state = _state()
    state.rounds.append(plan_round(folder, state))
    save_loop(folder, state)
    again = load_loop(folder)
    assert again == state and again.open_round() is again.rounds[0]
    (folder / LOOP_FILE).write_text(json.dumps({"version": 7}))
    with pytest.raises(LoopError, match="loop state version 7; this imf reads 1 to 2"):
        load_loop(folder)
    (folder / LOOP_FILE).write_text("{not json")
    with pytest.raises(LoopError, match="unreadable loop state"):
        load_loop(folder)
    with pytest.raises(LoopError, match="no loop.json here"):
        load_loop(tmp_path)


def test_a_version_1_loop_json_is_upgraded_on_load(tmp_path):
    folder = _folder(tmp_path)
    state = _state()
    state.rounds.append(plan_round(folder, state))
    state.rounds[0].outcomes.append(Outcome("t", "completed", 0.5, 0.01, selection=0.42))
    save_loop(folder, state)
    old = json.loads((folder / LOOP_FILE).read_text())
    old["version"] = 1
    outcome = old["rounds"][0]["outcomes"][0]
    outcome["fresh"] = outcome.pop("selection")  # what imf wrote before the seed ranges were named
    (folder / LOOP_FILE).write_text(json.dumps(old))
    again = load_loop(folder)
    assert again.version == 2 and again.rounds[0].outcomes[0].selection == 0.42
    assert again.rounds == state.rounds


def test_dry_run_prints_the_next_round_and_writes_nothing(tmp_path):
    folder = _folder(tmp_path)
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    text = dry_run(folder, ["local:cpu"], per_round=2)
    assert text.startswith("round 1 in ") and text.count("  imf trial ") == 2
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before


def test_an_ensemble_proposal_is_left_to_imf_ensemble(tmp_path):
    folder = tmp_path / "exp"
    scores = [0.5, 0.7, 0.8, 0.81, 0.79, 0.8]
    run = make_run(folder, n_emb=64, n_layer=2, scores=scores, se=0.02)
    for epoch in (2, 3, 4, 5):  # four top checkpoints tied within noise
        (run / "checkpoints" / f"epoch={epoch:04d}-test_mean_score={scores[epoch]:.3f}.pt").write_bytes(b"x")
    assert any(p.kind == "ensemble" for p in suggest(folder).proposals)
    current = plan_round(folder, _state(per_round=9))
    assert current is not None and current.proposals
    assert all(p.kind != "ensemble" for p in current.proposals)


RISING = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]


def test_warm_starts_chain_and_a_tried_one_never_repeats(tmp_path):
    folder = tmp_path / "exp"
    base = make_run(folder, n_emb=64, n_layer=2, scores=RISING, se=0.01)
    state = _state(per_round=1)
    first = plan_round(folder, state)
    (cont,) = first.proposals
    assert cont.kind == "continue" and cont.init_from == str((base / "checkpoints" / "best.pt").resolve())
    state.rounds.append(first)
    # its run, still rising: the next round continues the continuation
    run = make_run(folder / first.sweep, n_emb=64, n_layer=2, tid=cont.id, init_from=cont.init_from,
                   scores=[s + 0.1 for s in RISING], se=0.01)
    first.status = "concluded"
    second = plan_round(folder, state)
    (again,) = second.proposals
    assert again.kind == "continue" and again.id == f"{cont.id}-cont"
    assert again.init_from == str((run / "checkpoints" / "best.pt").resolve())
    state.rounds.append(second)
    make_run(folder / second.sweep, n_emb=64, n_layer=2, tid=again.id, init_from=again.init_from,
             scores=[0.9] * 6, se=0.01)  # flat: it ends the chain
    second.status = "concluded"
    third = plan_round(folder, state)
    assert third is not None and third.proposals
    assert all(p.kind != "continue" and p.init_from not in (cont.init_from, again.init_from)
               for p in third.proposals)


def test_seeds_of_a_tied_cell_are_concluded_as_the_cell_over_its_seeds(tmp_path):
    folder = tmp_path / "exp"
    make_run(folder, n_emb=64, n_layer=2, scores=[0.6] * 6, se=0.01)
    make_run(folder, n_emb=32, n_layer=2, scores=[0.59] * 6, se=0.01)  # tied with the best
    current = plan_round(folder, _state(per_round=9))
    current.proposals = [p for p in current.proposals if p.kind == "seeds"]
    assert len(current.proposals) == 4  # two more seeds for each of the two tied cells
    current.hypothesis = log_round_hypothesis(folder, current)
    for p in current.proposals:
        n_emb = load_config(p.config).policy.n_emb
        make_run(folder / current.sweep, n_emb=n_emb, n_layer=2, seed=p.seed, tid=p.id,
                 scores=[0.6 if n_emb == 64 else 0.5] * 6)
    conclude_round(folder, current)
    assert {o.cell for o in current.outcomes} == {"smoke-causal-e64-l2", "smoke-causal-e32-l2"}
    conclusion = IterationLogStore(folder).hypotheses()[0]["conclusion"]
    assert "cell smoke-causal-e64-l2 over 3 seeds: 0.6000 ± " in conclusion
    assert "cell smoke-causal-e32-l2 over 3 seeds: 0.5300 ± 0.0300" in conclusion


def test_dry_run_checks_its_flags_and_a_folder_without_scores_starts_no_loop(tmp_path):
    folder = _folder(tmp_path)
    with pytest.raises(LoopError, match="--per-round 0: give 1 or more"):
        dry_run(folder, ["local:cpu"], per_round=0)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ImfError, match="no run folders in"):
        start_loop(LoopRequest(empty, ["local:cpu"], 2))
    assert list(empty.iterdir()) == []


# 12 epochs whose score rose and held while val_loss turned up (tests/test_suggest_data.py)
PLATEAU = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]
OVERFIT = list(zip([0.5 - 0.02 * e for e in range(12)],
                   [0.60, 0.56, 0.53, 0.51, 0.50, 0.495, 0.50, 0.51, 0.52, 0.535, 0.55, 0.565]))


def _doubling_round(tmp_path: Path, gain: float) -> tuple[Path, LoopState, Round]:
    """A round that ran the more-data proposal of an overfitting best run: its run scored
    ``gain`` above the run it warm-started from, on 16 demonstrations instead of 8."""
    folder = tmp_path / "exp"
    base = make_run(folder, n_emb=64, n_layer=2, scores=PLATEAU, losses=OVERFIT)
    state = _state(per_round=1)
    current = plan_round(folder, state)
    (doubling,) = current.proposals
    assert doubling.kind == "more-data" and doubling.overrides == ["data.demo_episodes=16"]
    assert doubling.init_from == str((base / "checkpoints" / "best.pt").resolve())
    state.rounds.append(current)
    current.hypothesis = log_round_hypothesis(folder, current)
    make_run(folder / current.sweep, n_emb=64, n_layer=2, tid=doubling.id, init_from=doubling.init_from,
             extra=("data.demo_episodes=16",), scores=[s + gain for s in PLATEAU])
    conclude_round(folder, current)
    return folder, state, current


def test_a_doubling_that_gained_beyond_noise_is_doubled_again(tmp_path):
    folder, state, first = _doubling_round(tmp_path, gain=0.1)
    assert [o.verdict for o in first.outcomes] == ["better"]
    conclusion = IterationLogStore(folder).hypotheses()[0]["conclusion"]
    assert ("more data: smoke-causal-e64-l2-s42-demos16 (16 demonstrations) scored 0.8000 ± 0.0100 against "
            "0.7000 ± 0.0100 of smoke-causal-e64-l2-s42 (8 demonstrations): +0.1000 ± 0.0141, a gain beyond "
            "noise; the doubling paid") in conclusion.splitlines()
    first.status = "concluded"
    (again,) = plan_round(folder, state).proposals  # its run does not overfit: the gain carries it
    child = folder / first.sweep / "smoke-causal-e64-l2-s42-demos16"
    assert again.kind == "more-data" and again.overrides == ["data.demo_episodes=32"]
    assert again.id == "smoke-causal-e64-l2-s42-demos32" and Path(again.config) == child / "config.yaml"
    assert again.init_from == str((child / "checkpoints" / "best.pt").resolve())
    assert again.reason.startswith("smoke-causal-e64-l2-s42-demos16 gained from twice the data: ")
    assert again.reason.endswith("; warm start of its best.pt on 32 demonstrations (2 x 16)")


@pytest.mark.parametrize("gain, best", [(0.005, "smoke-causal-e64-l2-s42-demos16"),  # within noise
                                        (-0.1, "smoke-causal-e64-l2-s42")])  # worse: the best stays
def test_a_doubling_that_did_not_gain_stops_with_a_note(tmp_path, gain, best):
    folder, state, first = _doubling_round(tmp_path, gain=gain)
    conclusion = IterationLogStore(folder).hypotheses()[0]["conclusion"]
    assert any(line.startswith("more data: smoke-causal-e64-l2-s42-demos16 (16 demonstrations) scored ")
               and line.endswith("; the doubling stopped paying") for line in conclusion.splitlines())
    first.status = "concluded"
    state.per_round = 9
    found = suggest(folder)
    assert found.best["trial"] == best
    assert not [p for p in found.proposals if p.kind == "more-data"]
    assert any("the doubling stopped paying" in n for n in found.notes), found.notes
    second = plan_round(folder, state)
    assert second is not None and all(p.kind != "more-data" for p in second.proposals)


def test_the_round_table_fits_the_new_kinds(tmp_path):
    folder, _, first = _doubling_round(tmp_path, gain=0.1)
    first.proposals[0].kind = "curriculum"  # the longest kind name
    table = render_round(first).splitlines()
    assert table[1].split()[1] == "curriculum" and table[1].split()[2:4] == ["0.8000", "±"]
