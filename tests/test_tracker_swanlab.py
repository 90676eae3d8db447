"""SwanLab runs hold what the spec says: scalars, the config once, no console capture; a
standalone trial has no group; one ``swanlab sync <path>`` line is printed."""
from __future__ import annotations

from collections import Counter

import pytest

from imf.config import load_config
from imf.trackers import RunLogger, run_group


def _records(run_dir):
    """(kind, record) of every record in the run's .swanlab file."""
    from swanlab.proto.swanlab.record.v1 import record_pb2
    from swanlab.sdk.internal.core_python.store import DataStoreReader
    [path] = run_dir.glob("swanlog/run-*/run-*.swanlab")
    reader = DataStoreReader()
    reader.open(path)
    out = []
    for raw in reader:
        record = record_pb2.Record()
        record.ParseFromString(raw)
        kind = record.WhichOneof(record.DESCRIPTOR.oneofs[0].name)
        out.append((kind, getattr(record, kind)))
    reader.close()
    return out


def _run(tmp_path, capsys, group=None):
    said = []
    tracker = RunLogger(said.append)
    tracker.start(load_config("smoke", ["logging.tracker_options.swanlab.mode=offline"]), "t1", tmp_path, group)
    print("a line the trial prints")  # must not become a SwanLab record
    for step in range(3):
        tracker.log({"train_loss": 1.0 / (step + 1), "lr": 1e-4, "note": "text", "bad": float("nan")}, step)
    tracker.finish()
    return said, _records(tmp_path), capsys.readouterr().out


def test_scalars_config_once_no_console_no_group(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SWANLAB_MODE", raising=False)
    said, records, printed = _run(tmp_path, capsys)
    kinds = Counter(kind for kind, _ in records)
    assert "log" not in kinds  # no console capture
    assert set(kinds) <= {"start", "save", "column", "scalar", "finish"}
    saves = [r.name for kind, r in records if kind == "save"]
    assert saves.count("config") == 1 and set(saves) <= {"config", "metadata"}
    assert {r.key for kind, r in records if kind == "scalar"} == {"train_loss", "lr"}
    start = next(r for kind, r in records if kind == "start")
    assert (start.name, start.group) == ("t1", "")
    assert "swanlab" not in printed.replace("a line the trial prints", "")  # its banner is kept out
    line, note = said  # where the run is; the nan of 'bad' left out, said once
    assert note == "trackers: bad = nan at step 0 not logged (non-finite values are left out; logs.json.txt has null)"
    run_dir = next((tmp_path / "swanlog").glob("run-*"))
    assert line == f"swanlab: offline run in {run_dir}; upload it with: swanlab sync {run_dir}"


def test_a_sweep_trial_is_grouped_by_its_sweep(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SWANLAB_MODE", raising=False)
    _, records, _ = _run(tmp_path, capsys, group="full")
    assert next(r for kind, r in records if kind == "start").group == "full"


@pytest.mark.parametrize("overrides, named, group", [
    ([], None, None),  # standalone: no group, whatever sweep.name the preset has
    (["sweep.name=full"], None, "full"),  # started by a sweep
    (["sweep.name=full"], "mine", "mine"),  # logging.group wins
    ([], "mine", "mine"),
])
def test_run_group(overrides, named, group):
    cfg = load_config("smoke", overrides + ([f"logging.group={named}"] if named else []))
    assert run_group(cfg, overrides) == group


def test_a_resumed_attempt_continues_its_swanlab_run_and_a_new_attempt_does_not(tmp_path, monkeypatch):
    # imf trial --resume keeps the attempt's run_uid: its SwanLab run goes on under the same id
    # (offline, a second folder with that id, which swanlab sync joins); a rerun gets another
    monkeypatch.delenv("SWANLAB_MODE", raising=False)
    cfg = load_config("smoke", ["logging.tracker_options.swanlab.mode=offline"])
    for uid, resume in (("0123456789ab", False), ("0123456789ab", True), ("ba9876543210", False)):
        tracker = RunLogger(lambda line: None)
        tracker.start(cfg, "t1", tmp_path, None, run_uid=uid, resume=resume)
        tracker.log({"train_loss": 1.0}, 0)
        tracker.finish()
    ids = sorted(p.name for p in (tmp_path / "swanlog").glob("run-*/run-*.swanlab"))
    assert ids == ["run-imf0123456789ab.swanlab"] * 2 + ["run-imfba9876543210.swanlab"]
