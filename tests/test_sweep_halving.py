"""Successive halving's rule and its bookkeeping, without processes (imf/sweep/halving.py)."""
from __future__ import annotations

import json
import math
import statistics
from statistics import NormalDist

import pytest

from imf.errors import SweepError
from imf.scheduler.base import JobStatus
from imf.sweep.folder import SweepDir
from imf.sweep.halving import (Halving, check_rungs, judge, parse_rungs, plan_halving, rung_score,
                               status_lines, stop_z)
from imf.sweep.state import Decision, HalvingState, QueueState, RungScore, SweepState, TrialState

HALF = [1.0, 0.0] * 10  # mean 0.5
LOW = [0.0] * 18 + [1.0, 1.0]  # mean 0.1


def se_of(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values))


def score(trial: str, value: float, se: float | None, rung: int = 2) -> RungScore:
    return RungScore(trial, rung, value, se, 50 if se is not None else 0)


# ---------------------------------------------------------------------- the rule
def test_the_se_of_the_difference_comes_from_both_trials_per_episode_scores():
    row_half = {"epoch": 1, "test_mean_score": 0.5, "test_per_seed": {str(i): v for i, v in enumerate(HALF)}}
    row_low = {"epoch": 1, "test_mean_score": 0.1, "test_per_seed": {str(i): v for i, v in enumerate(LOW)}}
    cut, low = rung_score("a", 2, row_half), rung_score("b", 2, row_low)
    assert cut.se == pytest.approx(se_of(HALF)) and low.se == pytest.approx(se_of(LOW))
    assert cut.episodes == low.episodes == 20
    verdict = judge(low, [cut, low], eta=2)
    se_diff = math.sqrt(statistics.variance(HALF) / 20 + statistics.variance(LOW) / 20)
    assert verdict.outcome == "stopped"
    assert verdict.reason == (f"halving at epoch 2: {0.4:.4f} +- {se_diff:.4f} below the cut {0.5:.4f}, "
                              "beyond 1.96 SE (1 trial below the cut)")
    assert verdict.cut == 0.5 and verdict.compared == 2


def test_a_gap_inside_196_se_of_the_difference_is_kept_and_just_outside_is_stopped():
    se = 0.05
    threshold = 1.96 * math.hypot(se, se)
    cut = score("best", 0.8, se)
    inside, outside = score("in", 0.8 - threshold * 0.99, se), score("out", 0.8 - threshold * 1.01, se)
    assert judge(inside, [cut, inside], 2).outcome == "kept"
    assert "tied within noise" in judge(inside, [cut, inside], 2).reason
    assert judge(outside, [cut, outside], 2).outcome == "stopped"



def test_the_stop_threshold_is_corrected_for_the_trials_compared_below_the_cut():
    # nine scores at a rung, eta 3: the cut is the 3rd best and 6 trials are compared with it;
    # each needs a gap beyond the one-sided 2.5 / 6 % point (z 2.638), not 1.96 SE
    se = 0.04
    z6 = NormalDist().inv_cdf(1 - 0.025 / 6)
    assert stop_z(6) == pytest.approx(z6, rel=1e-4) and z6 == pytest.approx(2.638, abs=1e-3)
    assert stop_z(1) == pytest.approx(1.96, abs=1e-3) and stop_z(0) == stop_z(1)
    top = [score(f"top{i}", 0.5 + 0.01 * i, se) for i in range(3)]
    threshold = z6 * math.hypot(se, se)
    mine = score("near", 0.5 - 2.3 * math.hypot(se, se), se)  # beyond 1.96 SE, within 2.64
    rest = [score(f"r{i}", 0.2, se) for i in range(5)]
    verdict = judge(mine, [*top, mine, *rest], 3)
    assert verdict.outcome == "kept" and verdict.cut == 0.5 and verdict.compared == 9
    assert "tied within noise" in verdict.reason and "2.64 SE" in verdict.reason
    clear = score("clear", 0.5 - threshold * 1.01, se)
    stop = judge(clear, [*top, clear, *rest], 3)
    assert stop.outcome == "stopped" and "6 trials below the cut" in stop.reason
    assert judge(score("in", 0.5 - threshold * 0.99, se), [*top, score("in", 0.5 - threshold * 0.99, se), *rest],
                 3).outcome == "kept"


def test_the_correction_counts_only_the_scores_at_the_rung_so_far():
    # three of nine scores arrived: eta 3, the cut is the best and two are compared with it
    se = 0.04
    cut, other = score("a", 0.6, se), score("b", 0.3, se)
    mine = score("c", 0.6 - 2.5 * math.hypot(se, se), se)  # beyond 2.24 SE (two compared): stopped
    assert stop_z(2) == pytest.approx(2.241, abs=1e-3)
    assert judge(mine, [cut, mine, other], 3).outcome == "stopped"
    # six more arrive: two above the same cut, four below; six compared with it now (z 2.64)
    late = [score("x", 0.7, se), score("y", 0.65, se), *[score(f"r{i}", 0.1, se) for i in range(4)]]
    verdict = judge(mine, [cut, mine, other, *late], 3)
    assert verdict.cut == 0.6 and verdict.outcome == "kept"

def test_a_tie_is_never_stopped_even_with_no_spread():
    a, b = score("a", 0.6, 0.0), score("b", 0.6, 0.0)
    assert judge(a, [a, b], 2).outcome == judge(b, [a, b], 2).outcome == "kept"
    lower = score("c", 0.59, 0.0)  # measured without spread: any gap is clear
    assert judge(lower, [a, b, lower], 2).outcome == "stopped"


def test_fewer_than_eta_scores_wait_and_the_cut_is_the_top_one_over_eta():
    a = score("a", 0.9, 0.01)
    assert judge(a, [a], 2).outcome == "wait"
    b, c, d = score("b", 0.7, 0.01), score("c", 0.5, 0.01), score("d", 0.3, 0.01)
    assert judge(d, [a, b, d], 3).cut == 0.9  # n=3, eta=3: the best one goes on
    # n=5, eta=2: the top 2 go on, so the cut is the second best (0.7), not the best
    e = score("e", 0.68, 0.01)
    verdict = judge(e, [a, b, c, d, e], 2)
    assert verdict.cut == 0.7 and verdict.outcome == "kept" and verdict.compared == 5
    assert judge(c, [a, b, c, d, e], 2).outcome == "stopped"
    assert judge(b, [a, b, c, d, e], 2).outcome == "kept"


def test_without_per_episode_scores_the_noise_is_unknown_and_nothing_is_stopped():
    row = {"epoch": 1, "test_mean_score": 0.1}
    low = rung_score("b", 2, row)
    assert low.se is None and low.episodes == 0
    verdict = judge(low, [score("a", 0.9, 0.01), low], 2)
    assert verdict.outcome == "kept" and "noise is unknown" in verdict.reason
    assert rung_score("b", 2, {"epoch": 1, "val_loss": 1.0}) is None


# ---------------------------------------------------------------------- the inputs
@pytest.mark.parametrize("eta, rungs, words", [
    (1, "2", "--halving 1: ETA must be an integer >= 2"),
    (0, "2", "--halving 0: ETA must be an integer >= 2"),
    (2, "4,2", "--rungs '4,2': expected strictly increasing"),
    (2, "2,2", "--rungs '2,2': expected strictly increasing"),
    (2, "0,2", "--rungs '0,2': expected strictly increasing"),
    (2, "2,x", "--rungs '2,x': expected strictly increasing"),
    (None, "2", "--rungs needs --halving ETA"),
    (3, None, "--halving 3 needs --rungs"),
])
def test_bad_halving_flags_are_one_clear_error(eta, rungs, words):
    with pytest.raises(SweepError) as info:
        plan_halving(eta, rungs)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_rungs_must_lie_within_the_epochs_and_on_rollout_epochs():
    hv = plan_halving(2, "2,4,8")
    assert hv.rungs == [2, 4, 8] and plan_halving(None, None) is None
    check_rungs(hv, {"a": 8, "b": 10}, rollout_every=2)
    with pytest.raises(SweepError, match="rung 8 is beyond the 6 epochs of trial b"):
        check_rungs(hv, {"a": 8, "b": 6}, rollout_every=None)
    with pytest.raises(SweepError, match="epoch 2 has no rollout score .training.rollout_every=4"):
        check_rungs(hv, {"a": 8}, rollout_every=4)
    check_rungs(HalvingState(2, parse_rungs(" 4, 7")), {"a": 7}, rollout_every=4)  # the last epoch rolls out


# ---------------------------------------------------------------------- in the engine, by hand
def sweep_state(n: int = 3, epochs: int = 6, eta: int = 2) -> SweepState:
    trials = [TrialState(f"t{i}", [], i, epochs, {}, 1.0, "local:cpu", state="running", epoch=0)
              for i in range(n)]
    return SweepState("h", "smoke", ["x"], queues=[QueueState("local:cpu", "local:cpu")], trials=trials,
                      halving=HalvingState(eta, [2, 4]))


def rung_row(epoch: int, episodes: list[float]) -> str:
    return json.dumps({"epoch": epoch - 1, "test_mean_score": sum(episodes) / len(episodes),
                       "test_per_seed": {str(i): v for i, v in enumerate(episodes)}}) + "\n"


def poll(halving: Halving, trial: TrialState, text: str = "", state: str = "running",
         code: int | None = None) -> str | None:
    trial.epoch += text.count("\n")
    return halving.verdict(trial, JobStatus(state, exit_code=code, new_log=text))


def test_a_trial_reaching_the_rung_early_is_judged_once_eta_scores_exist():
    state = sweep_state()
    hv, (a, b, c) = Halving(state), state.trials
    a.epoch = b.epoch = 1
    assert poll(hv, b, rung_row(2, LOW)) is None  # alone at the rung: it waits
    assert poll(hv, a, rung_row(2, HALF)) is None  # the best of two
    stop = poll(hv, b)  # the next poll of b: now two scores are there
    assert stop is not None and stop.startswith("halving at epoch 2:")
    assert [(d.trial, d.rung, d.outcome) for d in state.halving.decisions] == [("t0", 2, "kept"), ("t1", 2, "stopped")]
    assert hv.stopped(b) == stop and hv.stopped(a) is None
    assert poll(hv, b) == stop and len(state.halving.decisions) == 2  # asked again: the same, once
    c.epoch = 1
    assert poll(hv, c, rung_row(2, LOW), state="exited", code=0) is None  # ended by itself
    assert state.halving.score_of("t2", 2) is not None and state.halving.decision_of("t2", 2) is None


def test_a_half_written_rung_line_waits_for_its_end_and_other_epochs_are_ignored():
    state = sweep_state()
    hv, a = Halving(state), state.trials[0]
    line = rung_row(2, HALF)
    poll(hv, a, rung_row(1, HALF) + rung_row(3, HALF) + line[:10])
    assert state.halving.scores == []
    poll(hv, a, line)
    assert [(s.trial, s.rung) for s in state.halving.scores] == [("t0", 2)]


def test_a_restarted_controller_reads_the_decisions_back_and_never_decides_again(tmp_path):
    state = sweep_state()
    hv, (a, b, _) = Halving(state), state.trials
    a.epoch = b.epoch = 1
    poll(hv, a, rung_row(2, LOW))
    poll(hv, b, rung_row(2, LOW))  # a and b tie: both kept at rung 2 (b now, a at its next poll)
    assert poll(hv, a) is None and [d.outcome for d in state.halving.decisions] == ["kept", "kept"]
    before = json.loads(json.dumps(state.to_dict()))
    sdir = SweepDir(tmp_path)
    sdir.save(state)
    again = sdir.load()  # the restart
    assert again.halving == state.halving
    hv2, (a2, b2, c2) = Halving(again), again.trials
    c2.epoch = 1
    poll(hv2, c2, rung_row(2, HALF) + rung_row(2, HALF))  # far better, seen twice: one score
    assert len([s for s in again.halving.scores if s.trial == "t2"]) == 1
    # a and b would now be below the cut (0.5) by more than the noise; kept stays kept
    assert poll(hv2, a2) is None and poll(hv2, b2) is None
    assert again.to_dict()["halving"]["decisions"][:2] == before["halving"]["decisions"]
    assert [d.trial for d in again.halving.decisions] == ["t1", "t0", "t2"]


def test_a_stop_decided_before_a_restart_stops_the_trial_again(tmp_path):
    state = sweep_state()
    hv, (a, b, _) = Halving(state), state.trials
    a.epoch = b.epoch = 1
    poll(hv, a, rung_row(2, HALF))
    stop = poll(hv, b, rung_row(2, LOW))
    assert poll(hv, a) is None  # a alone waited at the rung; now it is kept
    SweepDir(tmp_path).save(state)
    again = SweepDir(tmp_path).load()
    hv2, b2 = Halving(again), again.trials[1]
    assert poll(hv2, b2) == stop  # still running after the restart: stopped again
    assert poll(hv2, b2, state="lost") == stop  # killed by the stop before the restart: stopped_early
    assert poll(hv2, b2, state="exited", code=0) is None  # it finished anyway: its result counts
    assert len(again.halving.decisions) == 2
    assert status_lines(again)[0] == "successive halving: eta 2, rungs 2,4: 1 stopped, 1 kept at a rung"
    assert status_lines(again)[1] == f"t1 running: {stop}"


def test_a_trial_at_its_last_epoch_is_never_stopped():
    state = sweep_state(epochs=2)
    hv, (a, b, _) = Halving(state), state.trials
    a.epoch = b.epoch = 1
    poll(hv, a, rung_row(2, HALF))
    assert poll(hv, b, rung_row(2, LOW)) is None  # nothing left to save
    assert state.halving.decision_of("t1", 2) is None


# ---------------------------------------------------------------------- sweep.json
def test_a_sweep_json_without_halving_still_loads(tmp_path):
    data = sweep_state().to_dict()
    del data["halving"]
    (tmp_path / "sweep.json").write_text(json.dumps(data))
    assert SweepDir(tmp_path).load().halving is None


@pytest.mark.parametrize("halving, words", [
    ({"eta": 1, "rungs": [2]}, "halving 'eta' must be an int >= 2"),
    ({"eta": 2, "rungs": [4, 2]}, "halving 'rungs' must be strictly increasing"),
    ({"eta": 2, "rungs": [2], "decisions": [{"trial": "t0", "rung": 2, "outcome": "maybe", "reason": ""}]},
     "halving decisions[0] outcome must be kept or stopped"),
    ({"eta": 2, "rungs": [2], "scores": [{"trial": "t0", "rung": 2, "score": "high", "se": None,
                                          "episodes": 0}]}, "halving scores[0] 'score' must be a number, got 'high'"),
    ({"eta": 2, "rungs": [2], "extra": 1}, "halving unknown key 'extra'"),
    ({"eta": "2", "rungs": [2]}, "halving 'eta' must be an int, got '2'"),
    ({"eta": 2, "rungs": ["2"]}, "halving 'rungs' must be a list of ints, got ['2']"),
    ([2], "'halving' must be an object"),
])
def test_a_damaged_halving_field_is_one_error_naming_it(tmp_path, halving, words):
    data = sweep_state().to_dict()
    data["halving"] = halving
    (tmp_path / "sweep.json").write_text(json.dumps(data))
    with pytest.raises(SweepError, match="sweep.json: ") as info:
        SweepDir(tmp_path).load()
    assert words in str(info.value)


def test_a_halved_trials_own_interrupted_summary_is_recorded_as_stopped_early(tmp_path):
    from imf.store.summary import RunSummary, read_summary
    from imf.sweep.finish import final_summary

    state = sweep_state()
    hv, (a, b, c) = Halving(state), state.trials
    a.epoch = b.epoch = 1
    poll(hv, a, rung_row(2, HALF))
    stop = poll(hv, b, rung_row(2, LOW))
    (tmp_path / "t1").mkdir()
    (tmp_path / "t2").mkdir()
    RunSummary(id="t1", status="interrupted", note="mine").write(tmp_path / "t1")
    b.state = "stopped_early"
    summary = final_summary(b, state, tmp_path / "t1")
    assert summary.status == "stopped_early" and summary.note == f"mine; {stop}"
    assert read_summary(tmp_path / "t1").status == "stopped_early"
    assert final_summary(b, state, tmp_path / "t1").note == f"mine; {stop}"  # recorded twice: once
    RunSummary(id="t2", status="stopped_early", note="patience").write(tmp_path / "t2")
    c.state = "stopped_early"  # stopped by its own patience, not by halving: left as it is
    assert final_summary(c, state, tmp_path / "t2").note == "patience"


def test_status_prints_the_reasons_of_the_latest_stops_only():
    state = sweep_state(n=14)
    for i, trial in enumerate(state.trials[:12]):
        state.halving.decisions.append(Decision(trial.id, 2, "stopped", f"reason {i}"))
    lines = status_lines(state)
    assert lines[0].endswith("12 stopped, 0 kept at a rung") and "the last 10 stops" in lines[1]
    assert lines[2] == "t2 running: reason 2" and lines[-1] == "t11 running: reason 11" and len(lines) == 12
