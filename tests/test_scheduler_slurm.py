"""The slurm scheduler against a real private single-node Slurm cluster (tests/slurm_cluster.py).

Slow (a time-limit test alone takes two minutes: Slurm counts limits in whole minutes and
checks them every 30 s), so not in the default run: ``pytest -m slurm`` (.ci/run does).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _sweep_helpers import fake_command, wait_for
from slurm_cluster import SlurmCluster, missing_binaries

from imf.scheduler.sweep import SweepRequest, resume_sweep, start_sweep
from imf.store.scoreboard import ScoreboardStore

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    missing = missing_binaries()
    if missing:
        pytest.skip(f"no {', '.join(missing)} on this host "
                    f"(apt-get install -y slurmctld slurmd slurm-client munge)")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    old = os.environ.get("SLURM_CONF")
    try:
        cluster.start()
        os.environ["SLURM_CONF"] = str(cluster.conf)
        yield cluster
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        cluster.stop()


def squeue(*columns: str) -> list[list[str]]:
    out = subprocess.run(["squeue", "-h", "-o", "|".join(columns or ("%i", "%T"))],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def sweep_json(sweep_dir: Path) -> dict:
    return json.loads((sweep_dir / "sweep.json").read_text())


def running_jobs(sweep_dir: Path, n: int = 1) -> list[dict]:
    """Wait until ``n`` trials run as Slurm jobs; their states from sweep.json."""
    def found():
        try:
            trials = sweep_json(sweep_dir)["trials"]
        except (OSError, ValueError):
            return None
        live = [t for t in trials if t["state"] == "running" and (t["handle"] or {}).get("job_id")]
        return live if len(live) >= n else None
    return wait_for(found, timeout=240, interval=0.2)


class MaxJobs(threading.Thread):
    """The most jobs Slurm held (pending or running) at once while the test ran."""

    def __init__(self):
        super().__init__(daemon=True)
        self.most, self.done = 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                self.most = max(self.most, len([j for j in squeue() if j[1] in ("PENDING", "RUNNING")]))
            except subprocess.SubprocessError:
                pass
            time.sleep(0.3)


def test_a_four_trial_grid_on_two_slurm_slots_completes_each_trial_once(slurm, tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.5", "--ledger", str(ledger)))
    req = SweepRequest(config="smoke", grids=["64,128x1,2"], queues=["slurm://debug?slots=2"],
                       name="grid", out=tmp_path / "runs", epochs=3, poll=0.5, stall_timeout=300)
    watcher = MaxJobs()
    watcher.start()
    lines: list[str] = []
    try:
        start_sweep(req, lines.append)
    finally:
        watcher.done.set()
    sweep_dir = tmp_path / "runs" / "grid"
    data = sweep_json(sweep_dir)
    assert data["status"] == "finished"
    assert [q["name"] for q in data["queues"]] == ["slurm://debug?slots=2", "slurm://debug?slots=2#2"]
    assert all(t["state"] == "completed" and t["attempts"] == 1 for t in data["trials"]), data["trials"]
    assert len({t["handle"]["job_id"] for t in data["trials"]}) == 4
    assert sorted(line.split()[0] for line in ledger.read_text().splitlines()) == \
        sorted(t["id"] for t in data["trials"])  # each trial ran exactly once
    assert 1 <= watcher.most <= 2  # never more jobs in the partition than slots
    for t in data["trials"]:
        run = sweep_dir / t["id"]
        assert (run / "summary.json").is_file() and "epoch 2 done" in (run / "stdout.log").read_text()
        assert list((run / "slurm").glob(f"{t['handle']['job_id']}_*"))  # submitit's own files
    records = ScoreboardStore(sweep_dir).read()
    assert sorted(r["id"] for r in records) == sorted(t["id"] for t in data["trials"])
    assert (sweep_dir / "report.md").is_file() and any("rank" in line for line in lines)
    assert "job " in (sweep_dir / "sweep.log").read_text()
