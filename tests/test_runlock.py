"""trial.lock: one live owner per run folder; a gone owner's lock is taken over."""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from imf.errors import RunBusyError
from imf.store.runlock import LOCK, REMOTE_STALE_S, Holder, RunLock, live_holder, process_start_time
from imf.store.summary import RunSummary, read_summary


def _write_lock(folder: Path, pid: int, start: str, host: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LOCK).write_text(Holder(pid, start, host, "2026-01-01T00:00:00+00:00", "other").line())


def _dead_pid() -> int:
    pid = 4_000_000  # above the default pid_max: never a running process
    assert process_start_time(pid) is None
    return pid


def test_a_lock_is_held_reentrant_and_removed_at_the_end(tmp_path):
    run = tmp_path / "run"
    with RunLock.acquire(run, "mine"):
        holder = live_holder(run)
        assert holder is not None and holder.pid == os.getpid() and holder.trial_id == "mine"
        with RunLock.acquire(run, "mine"):  # the same process again (trial_command, then run_trial)
            pass
        assert (run / LOCK).exists()
    assert not (run / LOCK).exists()
    assert not run.exists()  # it made the folder and left nothing in it


def test_a_live_holder_on_this_host_is_refused_with_its_pid_and_nothing_changes(tmp_path):
    run = tmp_path / "run"
    _write_lock(run, 1, process_start_time(1), socket.gethostname())  # pid 1 runs as long as we do
    (run / "logs.json.txt").write_text("{}\n")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with pytest.raises(RunBusyError, match=r"in use by trial other \(pid 1 on "):
        RunLock.acquire(run, "mine")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_a_reused_pid_with_another_start_time_is_not_the_holder(tmp_path):
    run = tmp_path / "run"
    _write_lock(run, 1, "12345678901", socket.gethostname())
    with RunLock.acquire(run, "mine"):
        assert live_holder(run).trial_id == "mine"


def test_a_dead_holder_is_taken_over(tmp_path):
    run = tmp_path / "run"
    _write_lock(run, _dead_pid(), "1", socket.gethostname())
    with RunLock.acquire(run, "mine"):
        assert live_holder(run).trial_id == "mine"


def test_another_hosts_lock_is_live_while_touched_and_stale_after(tmp_path):
    run = tmp_path / "run"
    _write_lock(run, 1234, "1", "some-other-host")
    with pytest.raises(RunBusyError, match="some-other-host"):
        RunLock.acquire(run, "mine")
    old = time.time() - REMOTE_STALE_S - 5
    os.utime(run / LOCK, (old, old))
    with RunLock.acquire(run, "mine"):
        assert live_holder(run).trial_id == "mine"


def test_a_running_summary_without_a_live_owner_reads_interrupted(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    RunSummary(id="r", status="running").write(run)
    assert read_summary(run).status == "interrupted"
    assert "gone" in read_summary(run).reason
    with RunLock.acquire(run, "r"):
        assert read_summary(run).status == "running"


def test_an_unreadable_lock_counts_while_fresh(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK).write_text("garbage\n")
    with pytest.raises(RunBusyError):
        RunLock.acquire(run, "mine")
    old = time.time() - REMOTE_STALE_S - 5
    os.utime(run / LOCK, (old, old))
    with RunLock.acquire(run, "mine"):
        assert live_holder(run).trial_id == "mine"
