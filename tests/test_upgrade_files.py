"""Old files of each kind, read through imf/upgrade.py: upgraded once on first read (written back
where the reader owns the file, else in memory), what changed named in one line, read the same as
before; a second read changes nothing."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import torch
import yaml

from imf.config import load_config, load_resolved
from imf.loop.state import load_loop
from imf.scheduler.base import Handle
from imf.store.layout import PID
from imf.sweep.engine import Engine
from imf.sweep.folder import SweepDir
from imf.sweep.launch import SweepRequest, plan_sweep
from imf.train.checkpoint import load_checkpoint
from imf.upgrade import FileKind, Step

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "learning"))

from run_record import read_records  # noqa: E402


def test_a_read_names_the_steps_that_changed_the_file_and_keeps_the_callers_data():
    kind = FileKind("thing.json", (Step(2, "a renamed", lambda d: {("b" if k == "a" else k): v for k, v in d.items()}),
                                   Step(3, "nothing to do", lambda d: d)))
    old = {"version": 1, "a": {"x": 1}}
    read = kind.read(old)
    assert read.data == {"version": 3, "b": {"x": 1}} and old == {"version": 1, "a": {"x": 1}}
    assert read.note(kind, "t.json") == "t.json: thing.json upgraded from 1 to 3: a renamed"
    again = kind.read(read.data)
    assert again.data == read.data and again.changed == () and again.note(kind, "t.json") == ""
    unversioned = FileKind("doc", (Step(1, "a renamed", kind.steps[0].apply),), key="")
    assert unversioned.read({"a": 1}).data == {"b": 1} and unversioned.read({"b": 1}).changed == ()


def test_an_old_run_config_is_written_back_once_with_todays_keys(tmp_path, capsys):
    today = load_config("smoke", ["objective.options.time_mu=0.25", "logging.trackers=swanlab",
                                  "logging.tracker_options.swanlab.mode=local"]).to_dict()
    old = copy.deepcopy(today)  # as an older imf saved it
    old["objective"]["time_mu"] = old["objective"]["options"].pop("time_mu")
    old["logging"].pop("trackers"), old["logging"].pop("tracker_options")
    old["logging"].update(swanlab=True, swanlab_mode="local")
    old["training"]["resume"], old["policy"]["image_size"] = False, 96
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(old, sort_keys=False))
    assert load_resolved(path).to_dict() == today
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [f"{path}: config upgraded: removed keys dropped (training.resume, policy.image_size, "
                    "logging.metric); objective knobs moved into objective.options; logging.swanlab and "
                    "logging.swanlab_mode became logging.trackers and tracker_options"]
    on_disk = path.read_bytes()
    assert yaml.safe_load(on_disk) == today
    assert load_resolved(path).to_dict() == today  # the second read changes nothing
    assert capsys.readouterr().err == "" and path.read_bytes() == on_disk


def _tokenless_sweep(tmp_path: Path) -> tuple[SweepDir, int]:
    """A sweep.json of an imf before attempt tokens (version 1): its trial was starting when the
    controller stopped, and its folder still holds the pid file of its previous attempt."""
    sdir, state, _ = plan_sweep(SweepRequest(config="smoke", grids=["64x1"], queues=["local:cpu"], name="s",
                                             out=tmp_path, epochs=1, poll=0.1, stall_timeout=20.0))
    (trial,) = state.trials
    engine = Engine(sdir, state, lambda s: None)
    job = engine.job_request(trial)
    trial.move("launch")
    trial.handle = Handle(state.queues[0].spec, engine.scheduler(trial.queue).job_dir(job), str(job.run_dir))
    stale = 4_000_000  # above any pid_max: not alive
    trial.history = [{"attempt": 1, "queue": trial.queue, "pid": stale, "outcome": "failed"}]
    data = state.to_dict()
    data["version"] = 1
    for t in data["trials"]:
        t.pop("stale_pid")
    sdir.path.mkdir(parents=True, exist_ok=True)
    sdir.state_file.write_text(json.dumps(data))
    Path(job.run_dir).mkdir(parents=True, exist_ok=True)
    (Path(job.run_dir) / PID).write_text(f"{stale} 123\n")  # no token: older wrappers wrote none
    return sdir, stale


def test_a_tokenless_starting_trial_that_shows_its_previous_pid_had_not_started(tmp_path):
    sdir, stale = _tokenless_sweep(tmp_path)
    before = sdir.state_file.read_bytes()
    state = sdir.load()
    assert state.trials[0].stale_pid == stale and sdir.state_file.read_bytes() == before  # in memory only
    engine = Engine(sdir, state, lambda s: None)
    engine.recovery.reattach_all()
    (trial,) = engine.state.trials
    assert trial.state == "pending" and trial.handle is None and trial.stale_pid is None
    log = (sdir.path / "sweep.log").read_text()
    assert f"{trial.id} had not started when the controller stopped; it starts normally" in log  # no revoke
    assert "sweep.json: sweep.json upgraded from 1 to 2: a trial starting before attempt tokens" in log
    assert json.loads(sdir.state_file.read_text())["version"] == 2
    again = SweepDir(sdir.path)
    again.load()
    assert again.upgraded == ""
    again.save(again.load())
    assert (sdir.path / "sweep.log").read_text().count("upgraded") == 1


def test_an_old_loop_json_is_written_back_once(tmp_path, capsys):
    outcome = {"id": "p1", "status": "completed", "fresh": 0.7}
    data = {"version": 1, "queues": ["local:cpu"], "rounds_max": 2,
            "rounds": [{"number": 1, "sweep": "loop-r01", "best_before": {}, "outcomes": [outcome]}]}
    (tmp_path / "loop.json").write_text(json.dumps(data))
    state = load_loop(tmp_path)
    assert state.rounds[0].outcomes[0].selection == 0.7 and state.version == 2
    assert capsys.readouterr().err.strip() == (f"{tmp_path / 'loop.json'}: loop.json upgraded from 1 to 2: "
                                               "an outcome's selection score is 'selection', not 'fresh'")
    on_disk = (tmp_path / "loop.json").read_bytes()
    assert json.loads(on_disk)["rounds"][0]["outcomes"][0]["selection"] == 0.7
    assert load_loop(tmp_path) == state and capsys.readouterr().err == ""
    assert (tmp_path / "loop.json").read_bytes() == on_disk


def test_old_result_records_are_written_back_once_with_todays_keys(tmp_path, capsys):
    path = tmp_path / "keypoints.json"
    rows = [{"id": "a", "fresh_score": 0.8, "best": 0.9}, {"id": "b", "selection_score": 0.5}]
    path.write_text(json.dumps(rows, indent=1) + "\n")
    today = [{"id": "a", "selection_score": 0.8, "best_test_score": 0.9}, {"id": "b", "selection_score": 0.5}]
    assert read_records(path) == today
    assert capsys.readouterr().err.strip() == (f"{path}: result records upgraded: "
                                               "fresh_* named selection_*, best* named best_test_*")
    assert path.read_text() == json.dumps(today, indent=1) + "\n"
    assert read_records(path) == today and capsys.readouterr().err == ""


def test_an_old_checkpoint_is_upgraded_in_memory_and_left_alone(tmp_path):
    path = tmp_path / "old.pt"
    torch.save({"format": "imf-checkpoint-1", "config": {"policy": {}}, "policy": {}, "normalizer": {}}, path)
    before = path.read_bytes()
    assert load_checkpoint(path)["config"]["policy"] == {"obs_type": "image"}
    assert path.read_bytes() == before
