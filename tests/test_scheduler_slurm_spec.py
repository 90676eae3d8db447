"""Slurm queue specs and hosts-file entries: parsed, checked, expanded into slots (no cluster)."""
from __future__ import annotations

import pytest

from imf.errors import QueueError, SweepError
from imf.scheduler.base import JobRequest
from imf.sweep.queues import load_hosts, resolve_queues
from imf.scheduler.slurm import SlurmScheduler, minutes, parse_spec


def test_a_full_spec_gives_every_parameter():
    partition, params = parse_spec(
        "slurm://gpu?slots=8&gpus=1&cpus=8&mem=32G&time=12:00:00&account=lab&qos=high&constraint=a100", {})
    assert partition == "gpu"
    assert params == {"slots": 8, "gpus": 1, "cpus": 8, "mem": "32G", "time": "12:00:00",
                      "account": "lab", "qos": "high", "constraint": "a100"}
    assert parse_spec("slurm://debug", {}) == ("debug", {"slots": 1})


@pytest.mark.parametrize("spec, message", [
    ("slurm://gpu?nodes=2", "unknown key 'nodes'; allowed: slots, gpus, cpus, mem, time, account, qos, constraint"),
    ("slurm://gpu?slots", "'slots' is not KEY=VALUE"),
    ("slurm://gpu?slots=0", "slots must be a whole number from 1 to 1000"),
    ("slurm://gpu?slots=100000", "slots must be a whole number from 1 to 1000, got '100000'"),
    ("slurm://gpu?gpus=-1", "gpus must be a whole number >= 0"),
    ("slurm://gpu?cpus=two", "cpus must be a whole number >= 1"),
    ("slurm://gpu?time=soon", "time must be a Slurm time limit"),
    ("slurm://gpu?mem=lots", "mem must be a size such as 32G"),
    ("slurm://", "expected slurm://PARTITION"),
    ("slurm://gp u", "expected slurm://PARTITION"),
    ("slurm://gpu/x", "expected slurm://PARTITION"),
    ("slurm://gpu?time=5\n&slots=2", "time must be a Slurm time limit"),  # a line of its own in sbatch
    ("slurm://gpu?mem=4G\n&slots=2", "mem must be a size"),
])
def test_bad_specs_say_what_is_allowed(spec, message):
    with pytest.raises(QueueError, match=message.replace("?", r"\?")):
        parse_spec(spec, {})


def test_time_limits_in_minutes_round_up_like_slurm():
    assert [minutes(t) for t in ("30", "00:00:05", "1:30", "12:00:00", "2-0", "1-01:00:01")] == \
        [30, 1, 2, 720, 2880, 1501]


def test_one_spec_is_n_slots_and_speed_stays_with_the_planner():
    queues = resolve_queues(["local:cpu", "slurm://debug?slots=3&speed=2&time=10"], load_hosts(None))
    assert [q.name for q in queues] == ["local:cpu", "slurm://debug?slots=3&time=10", "slurm://debug?slots=3&time=10#2",
                                        "slurm://debug?slots=3&time=10#3"]
    assert [q.speed for q in queues] == [1.0, 2.0, 2.0, 2.0]
    with pytest.raises(QueueError, match="the only option after '\\?' is speed=FACTOR"):
        resolve_queues(["local:cpu?slots=2"], load_hosts(None))


def test_slots_come_from_the_spec_or_the_hosts_file(tmp_path):
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("hosts:\n  gpu: {slots: 2, time: '01:00:00', account: lab,\n"
                     "        setup: [module load cuda, source ~/venv/bin/activate]}\n")
    queues = resolve_queues(["slurm://gpu"], load_hosts(hosts))
    assert len(queues) == 2
    sch = SlurmScheduler(queues[0].spec, queues[0].options)
    assert sch.params["account"] == "lab" and sch.setup[0] == "module load cuda"
    more = resolve_queues(["slurm://gpu?slots=3&account=other"], load_hosts(hosts))
    assert len(more) == 3  # the spec wins over the file
    assert SlurmScheduler(more[0].spec, more[0].options).params["account"] == "other"


def test_bad_hosts_file_entries_for_a_partition(tmp_path):
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("hosts:\n  gpu: {nodes: 2}\n")
    with pytest.raises(SweepError, match="unknown key 'nodes'; allowed: .*setup"):
        load_hosts(hosts)
    hosts.write_text("hosts:\n  gpu: {setup: {a: 1}}\n")
    with pytest.raises(QueueError, match="setup must be a shell line or a list of them"):
        resolve_queues(["slurm://gpu"], load_hosts(hosts))
    hosts.write_text("hosts:\n  gpu: {ssh_options: [-v]}\n")
    with pytest.raises(QueueError, match="unknown option 'ssh_options'"):
        resolve_queues(["slurm://gpu"], load_hosts(hosts))


def test_ssh_defaults_of_a_hosts_file_do_not_reach_a_partition(tmp_path):
    hosts = tmp_path / "hosts.yaml"  # as examples/hosts_seed.yaml: defaults meant for ssh hosts
    hosts.write_text("defaults: {workdir: ~/imf-runs, ssh_options: [-v], python: /opt/py}\n"
                     "hosts:\n  gpu: {account: lab}\n")
    ssh, slurm = resolve_queues(["ssh://box/gpu:0", "slurm://gpu"], load_hosts(hosts))
    assert ssh.options["workdir"] == "~/imf-runs" and ssh.options["ssh_options"] == ["-v"]
    assert slurm.options == {"python": "/opt/py", "account": "lab"}


def test_dry_run_text_names_the_sbatch_parameters(tmp_path):
    sch = SlurmScheduler("slurm://gpu?gpus=1&time=02:00:00&mem=8G", {"setup": ["module load cuda"]})
    job = JobRequest("s-t1", "s", tmp_path / "s-t1", ["{python}", "-m", "imf", "trial", "--out", "{run_dir}"],
              "smoke")
    text = sch.describe(job)
    assert text.startswith("sbatch --partition=gpu --job-name=s-t1 --time=02:00:00 --gpus-per-node=1 "
                           "--mem=8G --comment=imf:TOKEN: module load cuda; ")
    assert f"--out {tmp_path / 's-t1'}" in text


def test_plugins_lists_slurm_with_submitit_and_a_missing_requirement_is_broken():
    from imf import registry
    info = next(i for i in registry.discover("imf.schedulers") if i.name == "slurm")
    assert info.status == "ok" and info.requires[0].startswith("submitit ")

    class NeedsNothingInstalled:
        requires = ("no-such-dist-for-imf",)
    with pytest.raises(registry.PluginError, match="needs no-such-dist-for-imf, which is not installed"):
        registry.requirements(NeedsNothingInstalled)


@pytest.mark.parametrize("job_id, state, reason, exit_code, expected", [
    ("7", "PENDING", "Priority", None, ("queued", None, False, "Priority")),
    ("7", "PENDING", "None", None, ("queued", None, False, "pending")),
    ("7", "RUNNING", "None", None, ("running", None, False, "")),
    ("7", "RUNNING", "None", 143, ("running", None, False, "")),  # a requeued job's first run's end
    ("7", "COMPLETING", "None", 0, ("exited", 0, False, "")),
    ("7", "COMPLETED", "None", 0, ("exited", 0, False, "")),
    ("7", "TIMEOUT", "TimeLimit", -15, ("lost", -15, True, "Slurm ended job 7 with TIMEOUT")),
    ("7", "PREEMPTED", "None", None, ("lost", None, True, "Slurm ended job 7 with PREEMPTED")),
    ("7", "CANCELLED", "None", -15, ("exited", -15, False, "Slurm ended job 7 with CANCELLED")),
    ("7", "OUT_OF_MEMORY", "None", None, ("lost", None, False, "Slurm ended job 7 with OUT_OF_MEMORY")),
    ("7", None, "", 3, ("exited", 3, False, "")),  # squeue forgot it; its exit file tells
    ("7", None, "", None, ("lost", None, False, "Slurm no longer knows job 7")),
    (None, None, "", None, ("absent", None, False, "")),
])
def test_slurm_states_and_exit_files_map_onto_job_states(job_id, state, reason, exit_code, expected):
    from imf.scheduler.slurm_status import Progress, slurm_status
    status = slurm_status(job_id, state, reason, Progress(exit_code, 0, 0, ""))
    assert (status.state, status.exit_code, status.resume, status.reason) == expected


def test_status_shows_a_queued_trial_with_its_reason():
    from imf.sweep.state import TrialState
    from imf.sweep.status import trial_row
    trial = TrialState("t", [], 1, 2, {}, 1.0, "slurm://debug", state="queued", reason="Resources")
    assert trial_row(trial, 0.0)[2] == "queued: Resources"
