"""Trackers are plugins: TensorBoard and W&B (offline) read back with their own readers, a third
party's tracker from a fake dist-info, two at once, a failing one, old spellings, bad names."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from plugin_fakes import fake_distribution

from imf import registry
from imf.config import load_config
from imf.errors import ConfigError, PluginError
from imf.trackers import RunLogger, check_trackers

ROWS = [{"train_loss": 1.0 / (s + 1), "lr": 1e-4 * s, "val_loss": float("nan") if s == 1 else 0.5}
        for s in range(3)]


def _log(cfg, run_dir: Path, group: str | None = None) -> list[str]:
    said: list[str] = []
    tracker = RunLogger(said.append)
    tracker.start(cfg, "t1", run_dir, group)
    for step, row in enumerate(ROWS):
        tracker.log(row, step * 10)
    tracker.finish()
    return said


def test_tensorboard_event_files_hold_the_logged_scalars(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    said = _log(load_config("smoke", ["logging.trackers=tensorboard"]), tmp_path / "t1")
    assert said[0] == (f"tensorboard: event files in {tmp_path / 't1' / 'tensorboard'}; view them with: "
                       f"tensorboard --logdir {tmp_path}")
    events = EventAccumulator(str(tmp_path / "t1" / "tensorboard"))
    events.Reload()
    assert set(events.Tags()["scalars"]) == {"train_loss", "lr", "val_loss"}
    loss = [(e.step, e.value) for e in events.Scalars("train_loss")]
    assert loss == [(0, 1.0), (10, pytest.approx(0.5)), (20, pytest.approx(1 / 3))]
    assert [e.step for e in events.Scalars("val_loss")] == [0, 20]  # the nan left out


@pytest.mark.slow  # wandb runs its own service process (wandb-core)
def test_a_wandb_offline_run_has_name_group_config_and_scalars(tmp_path, monkeypatch):
    for var in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_DIR"):
        monkeypatch.delenv(var, raising=False)
    said = _log(load_config("smoke", ["logging.trackers=wandb"]), tmp_path / "t1", group="full")
    [run] = (tmp_path / "t1" / "wandb").glob("offline-run-*")
    assert said[0] == f"wandb: offline run in {run}; upload it with: wandb sync {run}"
    [path] = run.glob("run-*.wandb")
    records = _finished_records(path)
    runs = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert runs and runs[0].display_name == "t1" and runs[0].run_group == "full"
    config = {i.key: json.loads(i.value_json) for r in runs[:1] for i in r.config.update}
    assert config["policy"]["n_emb"] == 64 and config["name"] == "smoke"
    history = [{i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}
               for r in records if r.WhichOneof("record_type") == "history"]
    assert [h["_step"] for h in history] == [0, 10, 20]
    assert [h["train_loss"] for h in history] == [1.0, 0.5, pytest.approx(1 / 3)]
    assert "val_loss" not in history[1]
    kinds = {r.WhichOneof("record_type") for r in records}
    assert "output_raw" not in kinds and "stats" not in kinds  # no console or system capture


def _finished_records(path: Path, wait_s: float = 120.0) -> list:
    """The file's records once its exit record is there: wandb-core may still be writing the
    file after wandb.finish() returns on a loaded machine."""
    from wandb.proto import wandb_internal_pb2
    deadline = time.monotonic() + wait_s
    while True:
        records = []
        for data in _wandb_log_records(path.read_bytes()):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(data)
            records.append(record)
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.2)


def _wandb_log_records(raw: bytes) -> list[bytes]:
    """The protobuf records of a .wandb file: W&B's header (":W&B", magic 0xBEE1, version 0),
    then LevelDB's log format: 32 KiB blocks of [crc32c u32][length u16][type u8][data], a record
    split FIRST (2) / MIDDLE (3) / LAST (4) across blocks, FULL (1) when it fits."""
    assert raw[:4] == b":W&B" and int.from_bytes(raw[4:6], "little") == 0xBEE1, raw[:7]
    block, records, part, pos = 32768, [], b"", 7
    while pos + 7 <= len(raw):
        if block - pos % block < 7:  # the block's tail is padding
            pos += block - pos % block
            continue
        length, kind = int.from_bytes(raw[pos + 4:pos + 6], "little"), raw[pos + 6]
        data, pos = raw[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0 and length == 0:
            continue
        part = data if kind in (1, 2) else part + data
        if kind in (1, 4):
            records.append(part)
    return records


SOURCE = '''
import json
class ListTracker:
    def __init__(self):
        self.path = None
    def start(self, run):
        self.path = run.run_dir / "listed.jsonl"
        return f"list: {self.path}"
    def log(self, scalars, step):
        with open(self.path, "a") as f:
            f.write(json.dumps({"step": step, **scalars}) + "\\n")
    def finish(self):
        pass
class Broken:
    def start(self, run):
        return None
    def log(self, scalars, step):
        raise RuntimeError("disk on fire")
    def finish(self):
        pass
'''


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    root = fake_distribution(tmp_path / "site", "imf-list-tracker", "imf_list_tracker", SOURCE,
                             {"imf.trackers": {"list": "imf_list_tracker:ListTracker",
                                               "broken": "imf_list_tracker:Broken"}})
    monkeypatch.syspath_prepend(str(root))
    registry.clear_cache()
    yield
    registry.clear_cache()


def test_a_third_party_tracker_is_used_beside_a_built_in_and_a_failing_one_is_dropped(tmp_path, third_party):
    cfg = load_config("smoke", ["logging.trackers=list,tensorboard,broken"])
    said = _log(cfg, tmp_path / "t1")
    rows = [json.loads(line) for line in (tmp_path / "t1" / "listed.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 10, 20] and rows[0]["train_loss"] == 1.0
    assert (tmp_path / "t1" / "tensorboard").is_dir()
    failures = [line for line in said if line.startswith("broken:")]
    assert failures == ["broken: log failed (RuntimeError: disk on fire); continuing without it"]


def test_old_spellings_still_load():
    assert load_config("smoke", ["logging.swanlab=false"]).logging.trackers == []
    cfg = load_config("smoke", ["logging.swanlab_mode=local"])
    assert cfg.logging.trackers == ["swanlab"] and cfg.logging.tracker_options == {"swanlab": {"mode": "local"}}
    assert load_config("smoke", ["logging.trackers=none"]).logging.trackers == ["none"]


def test_bad_tracker_names_and_options_are_one_clear_error(third_party):
    with pytest.raises(PluginError, match="unknown tracker 'tensorbord' in imf.trackers; installed: .*tensorboard"):
        check_trackers(load_config("smoke", ["logging.trackers=tensorbord"]))
    with pytest.raises(ConfigError, match="logging.tracker_options.swanlab.mode.*allowed: offline, local, cloud, disabled"):
        check_trackers(load_config("smoke", ["logging.tracker_options.swanlab.mode=loud"]))
    with pytest.raises(ConfigError, match="logging.tracker_options.swanlab': expected a mapping"):
        check_trackers(load_config("smoke", ["logging.tracker_options.swanlab=5"]))
    with pytest.raises(ConfigError, match="options for wandb, which logging.trackers does not name"):
        check_trackers(load_config("smoke", ["logging.tracker_options.wandb.mode=offline"]))
    cfg = load_config("smoke", ["logging.trackers=swanlab"])
    check_trackers(cfg)
    assert cfg.logging.tracker_options == {"swanlab": {"mode": "offline"}}  # recorded in full


@pytest.mark.slow  # runs imf in a process
def test_a_tracker_whose_package_is_missing_fails_the_trial_before_its_folder(tmp_path):
    source = "class NeedsMissing:\n    requires = ('no-such-dist-for-imf',)\n"
    root = fake_distribution(tmp_path / "site", "imf-missing", "imf_missing", source,
                             {"imf.trackers": {"missing": "imf_missing:NeedsMissing"}})
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-m", "imf", "trial", "smoke", "logging.trackers=missing",
                          "--out", str(tmp_path / "run")], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == ["imf: error: config key 'logging.trackers': tracker 'missing' needs no-such-dist-for-imf, "
                     "which is not installed (pip install no-such-dist-for-imf)"]
    assert not (tmp_path / "run").exists()
    plugins = subprocess.run([sys.executable, "-m", "imf", "plugins"], env=env, capture_output=True, text=True)
    line = next(line for line in plugins.stdout.splitlines() if "missing" in line)
    assert "BROKEN" in line and "pip install no-such-dist-for-imf" in line


@pytest.mark.slow  # trains
def test_a_trials_tensorboard_scalars_equal_its_log(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from imf.pusht.expert import ensure_demo_dataset
    from imf.train.trial import TrialOptions, run_trial
    ensure_demo_dataset(4, seed=0, cache_dir=str(tmp_path / "cache"))
    cfg = load_config("smoke", ["logging.trackers=tensorboard", "logging.stores=none", "training.max_train_steps=3",
                                "eval.n_test=1", "eval.n_train=0", "eval.max_steps=8", "data.demo_episodes=4",
                                f"data.cache_dir={tmp_path / 'cache'}", "training.num_epochs=3"])
    run_trial(cfg, TrialOptions(trial_id="tb", run_dir=tmp_path / "tb"))
    rows = [json.loads(line) for line in (tmp_path / "tb" / "logs.json.txt").read_text().splitlines()]
    events = EventAccumulator(str(tmp_path / "tb" / "tensorboard"))
    events.Reload()
    for key in ("train_loss", "val_loss", "lr", "test_mean_score"):
        logged = [(r["global_step"], r[key]) for r in rows if r.get(key) is not None]
        assert [(e.step, e.value) for e in events.Scalars(key)] == [(s, pytest.approx(v)) for s, v in logged], key
    assert "test_per_seed" not in events.Tags()["scalars"]


@pytest.mark.slow  # runs imf in a process
def test_sweep_tracker_flag_reaches_every_trial_and_a_bad_name_is_one_line(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "imf", "sweep", "smoke", "--grid", "32x1,2",
                                     "--out", str(tmp_path), "--dry-run", *a], capture_output=True, text=True)
    out = run("--tracker", "tensorboard", "--tracker", "wandb")
    assert out.returncode == 0, out.stderr
    commands = [line for line in out.stdout.splitlines() if " -m imf trial " in line]
    assert len(commands) == 2 and all("logging.trackers=tensorboard,wandb" in c for c in commands)
    bad = run("--tracker", "tensorbord")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "unknown tracker 'tensorbord' in imf.trackers" in bad.stderr and not (tmp_path / "sweep").exists()
