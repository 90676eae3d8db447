"""The slurm scheduler against fake Slurm commands (tests/fake_slurm.py on PATH, answering from a
state file): squeue and sacct parsing, finding a job by its token, poll, stop, the partition
check and sbatch through submitit, in the default run. The real cluster: test_scheduler_slurm.py."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from imf.errors import QueueError
from imf.scheduler.base import Handle, JobRequest
from imf.scheduler.slurm import SlurmScheduler
from imf.store.layout import EXIT_CODE

pytestmark = pytest.mark.slow  # every answer is a process (the fake commands)
FAKE = Path(__file__).with_name("fake_slurm.py")
COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "sinfo", "srun")


class FakeSlurm:
    def __init__(self, folder: Path):
        self.state_file = folder / "slurm.json"
        self.bin = folder / "bin"
        self.bin.mkdir()
        for name in COMMANDS:
            shim = self.bin / name
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" {name} "$@"\n')
            shim.chmod(0o755)
        self.write(partitions=["debug", "gpu"])

    def read(self) -> dict:
        return json.loads(self.state_file.read_text()) if self.state_file.exists() else {}

    def write(self, **changes) -> None:
        self.state_file.write_text(json.dumps({**self.read(), **changes}))

    def calls(self, command: str) -> list[list[str]]:
        return [c[1:] for c in self.read().get("calls", []) if c[0] == command]


@pytest.fixture
def fake(tmp_path, monkeypatch) -> FakeSlurm:
    slurm = FakeSlurm(tmp_path)
    monkeypatch.setenv("PATH", f"{slurm.bin}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_SLURM_STATE", str(slurm.state_file))
    return slurm


def _handle(tmp_path: Path, name: str, token: str, job_id: str | None = None) -> Handle:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    return Handle("slurm://debug", str(folder), str(folder), token,
                  extra={"job_id": job_id} if job_id else {})


def test_one_squeue_and_sacct_answer_every_job_of_a_poll(fake, tmp_path):
    fake.write(jobs={"11": {"state": "PENDING", "reason": "Priority", "comment": "imf:a"},
                     "12": {"state": "RUNNING", "reason": "None", "comment": "imf:b"}},
               accounting={"13": "TIMEOUT", "14": "COMPLETED"})
    handles = [_handle(tmp_path, n, t, i) for n, t, i in
               [("a", "a", "11"), ("b", "b", "12"), ("c", "c", "13"), ("d", "d", "14"), ("e", "e", "15")]]
    (tmp_path / "d" / EXIT_CODE).write_text("0 d\n")
    (tmp_path / "b" / "logs.json.txt").write_text('{"epoch": 0}\n')
    found = SlurmScheduler("slurm://debug?slots=5").poll_many([(h, 0) for h in handles])
    assert [(s.state, s.exit_code, s.resume, s.reason) for s in found] == [
        ("queued", None, False, "Priority"),
        ("running", None, False, ""),
        ("lost", None, True, "Slurm ended job 13 with TIMEOUT"),
        ("exited", 0, False, ""),
        ("lost", None, False, "Slurm no longer knows job 15")]
    assert found[1].new_log == '{"epoch": 0}\n' and found[1].log_size == 13
    assert len(fake.calls("squeue")) == 1  # one squeue for the whole poll
    assert fake.calls("sacct") == [["-n", "-P", "-X", "-o", "JobID,State", "-j", "13,14,15"]]


def test_a_job_whose_id_was_not_saved_is_found_by_its_token(fake, tmp_path):
    fake.write(jobs={"21": {"state": "RUNNING", "reason": "None", "comment": "imf:other"},
                     "22": {"state": "RUNNING", "reason": "None", "comment": "imf:mine"}})
    handle = _handle(tmp_path, "t", "mine")
    status = SlurmScheduler("slurm://debug").poll(handle)
    assert status.state == "running" and handle.extra["job_id"] == "22"
    assert SlurmScheduler("slurm://debug").poll(_handle(tmp_path, "u", "nobody")).state == "absent"


def test_without_sacct_a_forgotten_job_is_lost_and_a_failing_squeue_is_a_queue_error(fake, tmp_path):
    (fake.bin / "sacct").unlink()
    status = SlurmScheduler("slurm://debug").poll(_handle(tmp_path, "t", "x", "31"))
    assert (status.state, status.reason) == ("lost", "Slurm no longer knows job 31")
    fake.write(fail={"squeue": "squeue: error: Unable to contact slurm controller"})
    with pytest.raises(QueueError, match="squeue failed: squeue: error: Unable to contact"):
        SlurmScheduler("slurm://debug").poll(_handle(tmp_path, "t", "x", "31"))


def test_stop_cancels_the_job_and_waits_until_slurm_no_longer_runs_it(fake, tmp_path):
    fake.write(jobs={"41": {"state": "RUNNING", "reason": "None", "comment": "imf:s"}}, cancel_after=2)
    SlurmScheduler("slurm://debug").stop(_handle(tmp_path, "t", "s"))  # found by its token
    assert fake.calls("scancel") == [["41"]]
    assert len(fake.calls("squeue")) >= 3 and "41" not in fake.read()["jobs"]


def test_stop_of_a_job_slurm_forgot_is_no_error_and_a_failing_scancel_is(fake, tmp_path):
    SlurmScheduler("slurm://debug").stop(_handle(tmp_path, "t", "gone"))  # no such job: nothing to do
    assert fake.calls("scancel") == []
    fake.write(jobs={"51": {"state": "RUNNING", "reason": "None", "comment": "imf:s"}},
               fail={"scancel": "scancel: error: Access/permission denied"})
    with pytest.raises(QueueError, match="scancel 51 failed: scancel: error: Access/permission denied"):
        SlurmScheduler("slurm://debug").stop(_handle(tmp_path, "t", "s", "51"))


def test_the_partition_check_lists_the_partitions_slurm_has(fake):
    SlurmScheduler("slurm://gpu").check()
    with pytest.raises(QueueError, match="Slurm has no partition 'big'; partitions: debug, gpu"):
        SlurmScheduler("slurm://big").check()


def test_start_submits_through_sbatch_with_the_token_as_comment(fake, tmp_path):
    job = JobRequest("s-t1", "s", tmp_path / "s-t1", ["{python}", "-c", "pass"], "smoke", token="tok1")
    handle = SlurmScheduler("slurm://debug?time=5").start(job)
    jobs = fake.read()["jobs"]
    assert handle.extra["job_id"] in jobs and jobs[handle.extra["job_id"]]["comment"] == "imf:tok1"
    assert jobs[handle.extra["job_id"]]["name"] == "s-t1"
    assert SlurmScheduler("slurm://debug").poll(handle).state == "queued"


def test_a_job_submitted_as_its_controller_died_is_re_attached_and_one_still_on_its_way_runs_nothing(
        fake, tmp_path):
    from imf.scheduler.claim import new_token
    from imf.scheduler.slurm_command import TrialCommand
    from imf.sweep.engine import Engine
    from imf.sweep.launch import SweepRequest, plan_sweep
    sdir, state, _ = plan_sweep(SweepRequest(config="smoke", grids=["64x1,2"], queues=["slurm://debug?slots=2"],
                                             name="s", out=tmp_path / "runs", epochs=2))
    engine, jobs = Engine(sdir, state, lambda s: None), {}
    for trial in state.trials:  # as _launch leaves them: "starting", the token saved, no job id yet
        jobs[trial.id] = job = engine.job_request(trial)
        job.token = new_token()
        trial.move("launch")
        trial.handle = Handle(trial.queue, str(job.run_dir.resolve()), str(job.run_dir), job.token)
    sdir.save(state)
    landed, lost = state.trials
    submitted = engine.scheduler(landed.queue).start(jobs[landed.id])  # sbatch answered, too late to save
    resumed = Engine(sdir, sdir.load(), lambda s: None)
    resumed.recovery.reattach_all()  # what --resume does first
    again = {t.id: t for t in resumed.state.trials}
    assert again[landed.id].state == "running"  # re-attached (its next poll says it is queued)
    assert again[landed.id].handle.extra["job_id"] == submitted.extra["job_id"]
    assert again[lost.id].state == "pending" and again[lost.id].attempts == 0
    assert len(fake.calls("sbatch")) == 1  # re-attached by its token, nothing submitted again
    run_dir = jobs[lost.id].run_dir.resolve()
    late = TrialCommand(str(run_dir), ["sh", "-c", "echo ran > ran.txt"], jobs[lost.id].token, [])
    assert late() == 0  # the lost submission's job runs after all: it finds its attempt revoked
    assert not (run_dir / "ran.txt").exists() and not (run_dir / "pid").exists()


def test_the_partitions_python_is_checked_on_the_submit_host_after_its_setup_lines(fake, tmp_path, monkeypatch):
    from plugin_fakes import fake_distribution
    from imf import registry
    from imf.errors import SweepError
    from imf.sweep.launch import SweepRequest, dry_run
    site = fake_distribution(tmp_path / "site", "imf-node-mask", "imf_node_mask",
                             "def mask(n_action, n_time, n_obs):\n    return None\n",
                             {"imf.masks": {"nodemask": "imf_node_mask:mask"}})
    wanted = ["imf.masks:nodemask", "imf.objectives:imf"]
    try:
        # the job's setup lines make the plugin importable, and the check runs them first
        SlurmScheduler("slurm://gpu", {"setup": [f"export PYTHONPATH={site}"]}).check_plugins(wanted)
        with pytest.raises(QueueError, match="cannot load imf.masks plugin 'nodemask'"):
            SlurmScheduler("slurm://gpu", {"env": {"IMF_UNRELATED": "1"}}).check_plugins(wanted)
        # a python the submit host does not have may be the nodes' own: not checked here
        SlurmScheduler("slurm://gpu", {"python": str(tmp_path / "no" / "python")}).check_plugins(wanted)
        python = tmp_path / "python-without-imf"
        python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
        python.chmod(0o755)
        hosts = tmp_path / "hosts.yaml"
        hosts.write_text(f"hosts:\n  gpu:\n    python: {python}\n")
        req = SweepRequest(config="smoke", grids=["32x1"], queues=["slurm://gpu?slots=2"], hosts=str(hosts),
                           name="s", out=tmp_path / "runs")
        with pytest.raises(SweepError, match=r"^no queue passed its check: slurm://gpu\?slots=2, slurm://gpu\?"
                                             rf"slots=2#2: the submit host's '{python}' cannot import imf "
                                             r"\(ModuleNotFoundError: No module named 'imf'\)"):
            dry_run(req)
    finally:
        registry.clear_cache()
