"""A Slurm requeue is one attempt whether or not a poll saw the job back in the queue: the job
writes its restart count (with its attempt's token), and the controller credits a restart it did
not see waiting (a busy controller, a job that started again within one poll)."""
from __future__ import annotations

from imf.atomic import atomic_write_json
from imf.scheduler.base import JobStatus
from imf.scheduler.slurm_status import RESTARTS, read_progress, slurm_status
from imf.sweep.outcomes import Outcomes
from imf.sweep.state import TrialState


def _trial(log_offset: int = 120) -> TrialState:
    return TrialState(id="t", overrides=[], seed=42, epochs=8, params={}, cost=1.0, queue="slurm",
                      state="running", log_offset=log_offset)


def test_the_restart_count_is_read_for_this_attempt_only(tmp_path):
    assert read_progress(tmp_path, 0, "tok-1").restarts == 0
    atomic_write_json(tmp_path / RESTARTS, {"token": "tok-1", "restarts": 2})
    assert read_progress(tmp_path, 0, "tok-1").restarts == 2
    assert read_progress(tmp_path, 0, "tok-2").restarts == 0  # another attempt's job
    status = slurm_status("17", "RUNNING", "None", read_progress(tmp_path, 0, "tok-1"))
    assert (status.state, status.restarts) == ("running", 2)


def test_a_restart_missed_while_queued_is_credited_once():
    trial = _trial()
    why = Outcomes.note_requeue(trial, JobStatus("running", restarts=1))
    assert trial.restarts_seen == 1 and "restart 1" in why
    assert Outcomes.note_requeue(trial, JobStatus("running", restarts=1)) is None  # once only


def test_a_requeue_seen_waiting_is_not_counted_again_when_the_job_reports_it():
    trial = _trial()
    assert Outcomes.note_requeue(trial, JobStatus("queued", requeued=True, reason="BeginTime")) == "BeginTime"
    assert trial.restarts_seen == 1
    assert Outcomes.note_requeue(trial, JobStatus("running", restarts=1)) is None
    assert Outcomes.note_requeue(trial, JobStatus("exited", exit_code=0, restarts=2))  # a second, missed


def test_a_job_that_never_ran_or_was_never_requeued_is_no_preemption():
    assert Outcomes.note_requeue(_trial(log_offset=0), JobStatus("queued", requeued=True)) is None
    assert Outcomes.note_requeue(_trial(), JobStatus("running")) is None
    assert Outcomes.note_requeue(_trial(), JobStatus("queued", requeued=False)) is None  # suspended
