"""sweep.json's trial state machine and its typed handles."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from imf.errors import SweepError
from imf.scheduler.base import Handle
from imf.sweep.stall import StallWatch
from imf.sweep.state import ACTIVE, FINAL, STATES, TRANSITIONS, SweepState, TrialState

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


def test_the_state_machine_counts_the_attempts():
    trial = _trial()
    trial.move("launch")
    trial.move("not started")  # the start failed: no attempt was made
    assert (trial.state, trial.attempts) == ("pending", 0)
    for event in ("launch", "started", "retry", "launch"):
        trial.move(event)
    assert (trial.state, trial.attempts) == ("starting", 2)


def test_every_event_leads_to_a_known_state():
    known = set(STATES)
    assert known == {"pending", *ACTIVE, *FINAL} and len(known) == len(STATES)
    for event, (allowed, to) in TRANSITIONS.items():
        assert set(allowed) <= known and (to is None or to in known), event


# writes of a ``.state`` outside TrialState.move that are not a trial's state: (file, target)
NOT_A_TRIAL = {
    ("context.py", "self.state"),  # the engine's SweepState, set once in SweepContext.__init__
    ("halving.py", "self.state"),  # Halving's SweepState, set once in __init__
    ("queue_health.py", "queue.state"),  # a QueueState: live, down or blocked
    ("launch.py", "queue.state"),
}


def _assigned(target: ast.expr) -> list[ast.expr]:
    """The expressions a target binds: the items of a tuple, list or starred target."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [leaf for item in target.elts for leaf in _assigned(item)]
    return _assigned(target.value) if isinstance(target, ast.Starred) else [target]


def state_writes(source: str) -> list[tuple[int, str]]:
    """(line, target) of every write of an attribute named ``state`` in ``source``, on any
    object: an assignment (plain, augmented, annotated, in a tuple), a for or with target,
    ``setattr(x, "state", ...)`` and ``x.__dict__["state"] = ...``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "state":
            found.append((node.lineno, f"setattr({ast.unparse(node.args[0])}, 'state')"))
        for leaf in (leaf for target in targets for leaf in _assigned(target)):
            if isinstance(leaf, ast.Attribute) and leaf.attr == "state":
                found.append((leaf.lineno, ast.unparse(leaf)))
            elif isinstance(leaf, ast.Subscript) and isinstance(leaf.slice, ast.Constant) \
                    and leaf.slice.value == "state" and isinstance(leaf.value, ast.Attribute) \
                    and leaf.value.attr == "__dict__":
                found.append((leaf.lineno, ast.unparse(leaf)))
    return sorted(found)


def test_the_state_write_finder_sees_every_form_on_any_name():
    source = "\n".join([
        "job.state = 'running'",  # a name the old test did not know
        "self.trials[0].state = 'failed'",
        "a, (b.state, *c) = 1, (2, 3)",
        "x.state += 'x'",
        "y.state: str = 'pending'",
        "setattr(whatever, 'state', 'completed')",
        "for z.state in ('a',): pass",
        "w.__dict__['state'] = 'stalled'",
        "sweep.state.status = 'running'",  # reads .state, writes .status: not a write of a state
        "setattr(v, name, 1)",  # the attribute is not known here
        "print(u.state)",
    ])
    assert state_writes(source) == [
        (1, "job.state"), (2, "self.trials[0].state"), (3, "b.state"), (4, "x.state"), (5, "y.state"),
        (6, "setattr(whatever, 'state')"), (7, "z.state"), (8, "w.__dict__['state']")]


def test_only_the_state_machine_changes_a_trials_state():
    # every other module of the controller changes a trial through TrialState.move
    seen = set()
    for path in SWEEP.glob("*.py"):
        if path.name == "state.py":
            continue
        for line, target in state_writes(path.read_text()):
            seen.add((path.name, target))
            assert (path.name, target) in NOT_A_TRIAL, \
                f"{path.name}:{line} sets {target} outside TrialState.move"
    assert seen == NOT_A_TRIAL  # each exception is still there (none kept after its code went)

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


def test_the_stall_watch_counts_quiet_time_from_the_last_growth():
    now = [100.0]
    watch = StallWatch(clock=lambda: now[0])
    watch.restart("t")
    now[0] = 130.0
    watch.saw("t", 0, 0)  # the first sizes after a start are progress
    now[0] = 160.0
    watch.saw("t", 0, 0)
    assert watch.quiet_for("t") == 30.0
    watch.saw("t", 10, 0)
    assert watch.quiet_for("t") == 0.0
    watch.forget("t")
    assert watch.quiet_for("t") == 0.0
