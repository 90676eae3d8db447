"""sweep.json's trial state machine and its typed handles."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from imf.errors import SweepError
from imf.scheduler.base import Handle
from imf.sweep.state import ACTIVE, FINAL, TRANSITIONS, SweepState, TrialState

SWEEP = Path(__file__).resolve().parents[1] / "imf" / "sweep"


def _trial(state: str = "pending") -> TrialState:
    return TrialState(id="t", overrides=[], seed=42, epochs=1, params={}, cost=1.0,
                      queue="local:cpu", state=state)


def test_a_trial_runs_its_life_through_the_transitions():
    trial = _trial()
    for event, expected in [("launch", "starting"), ("started", "running"), ("waiting", "queued"),
                            ("started", "running"), ("retry", "pending"), ("launch", "starting"),
                            ("started", "running")]:
        trial.move(event)
        assert trial.state == expected
    trial.move("ended", "completed")
    assert trial.state == "completed"


@pytest.mark.parametrize("state,event,final", [
    ("pending", "started", None),  # a trial never runs without a launch
    ("completed", "retry", None),  # a final state is final
    ("failed", "requeued", None),
    ("running", "launch", None),  # one job per trial
    ("running", "ended", "pending"),  # "ended" leads only to a final state
    ("running", "ended", None),
    ("running", "orphan result", None),  # only a trial waiting for a queue takes it
])
def test_a_transition_the_table_does_not_have_is_refused(state, event, final):
    trial = _trial(state)
    with pytest.raises(SweepError, match=f"trial t cannot go from {state} by '{event}'"):
        trial.move(event, final)
    assert trial.state == state


def test_every_event_leads_to_a_known_state():
    known = {"pending", *ACTIVE, *FINAL}
    for event, (allowed, to) in TRANSITIONS.items():
        assert set(allowed) <= known and (to is None or to in known), event


def test_only_the_state_machine_changes_a_trials_state():
    # every other module of the controller changes a trial through TrialState.move
    for path in SWEEP.glob("*.py"):
        if path.name == "state.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                for leaf in ast.walk(target):
                    assert not (isinstance(leaf, ast.Attribute) and leaf.attr == "state"
                                and isinstance(leaf.value, ast.Name) and leaf.value.id in ("trial", "t")), \
                        f"{path.name}:{node.lineno} sets a trial's state outside TrialState.move"


HANDLES = [
    # written by this imf: the scheduler's own keys sit beside the common ones
    {"queue": "ssh://h/cpu", "dir": "/r/t", "local_dir": "/l/t", "token": "ab", "pid": 7,
     "start_time": "123", "host": "h"},
    {"queue": "slurm://debug", "dir": "/l/t", "local_dir": "/l/t", "token": "cd", "pid": None,
     "start_time": None, "job_id": "41"},
]


@pytest.mark.parametrize("data", HANDLES)
def test_a_handle_reads_back_as_it_was_written(data):
    handle = Handle.from_dict(data)
    assert handle.to_dict() == data
    assert handle.label() == ("job 41" if "job_id" in data else "pid 7")


def test_a_handle_of_an_older_imf_without_dir_and_token_loads():
    handle = Handle.from_dict({"queue": "local:cpu", "pid": 12, "start_time": "9"})
    assert (handle.dir, handle.token, handle.pid, handle.extra) == ("", "", 12, {})


def test_a_sweep_state_round_trips_through_json_unchanged():
    trial = {**_trial("running").__dict__, "handle": HANDLES[0],
             "orphans": [{"queue": "ssh://h/cpu", "attempt": 1, "handle": HANDLES[0], "since": "x"}]}
    data = {"name": "s", "config": "smoke", "trial_command": ["imf", "trial"], "trials": [trial],
            "queues": [{"name": "ssh://h/cpu", "spec": "ssh://h/cpu", "speed": 1.0, "options": {},
                        "state": "live", "reason": ""}]}
    state = SweepState.from_dict(json.loads(json.dumps(data)))
    assert isinstance(state.trials[0].handle, Handle) and state.trials[0].orphans[0].attempt == 1
    out = state.to_dict()
    assert out["trials"][0] == trial
    assert SweepState.from_dict(out).to_dict() == out
