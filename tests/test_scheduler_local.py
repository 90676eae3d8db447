"""The local scheduler: detached jobs in their folder, process-group stops, pid + start time."""
from __future__ import annotations

import json
import os

import time

import pytest
from _sweep_helpers import wait_for

from imf.errors import QueueError
from imf.scheduler.base import JobRequest, scheduler_for
from imf.scheduler.wrapped import parse_probe


def make_job(tmp_path, script: str, tid: str = "j") -> JobRequest:
    return JobRequest(tid, "s", tmp_path / tid, ["sh", "-c", script], "smoke")


@pytest.mark.slow
def test_local_gpu_slot_sets_cuda_visible_devices_and_keeps_stdout(tmp_path):
    sch = scheduler_for("local:1", {})
    handle = sch.start(make_job(tmp_path, 'echo "gpu=$CUDA_VISIBLE_DEVICES"; exit 5'))
    status = wait_for(lambda: (s := sch.poll(handle)).done and s)
    assert status.state == "exited" and status.exit_code == 5
    assert (tmp_path / "j" / "stdout.log").read_text() == "gpu=1\n"


@pytest.mark.slow
def test_stop_kills_the_whole_process_tree(tmp_path):
    sch = scheduler_for("local:cpu", {"threads": 1})
    handle = sch.start(make_job(tmp_path, "sleep 300 & echo $! > child; sleep 300; wait"))
    child = int(wait_for(lambda: (tmp_path / "j" / "child").is_file()
                         and (tmp_path / "j" / "child").read_text().strip()))
    assert os.getpgid(child) == handle.pid  # the job is its own process group
    sch.stop(handle)
    assert sch.poll(handle).state == "lost"
    wait_for(lambda: not _alive(child), timeout=5)


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow
def test_progress_is_read_from_the_offset_and_a_new_attempt_archives_the_old(tmp_path):
    sch = scheduler_for("local:cpu", {})
    job = make_job(tmp_path, "for i in 0 1 2; do echo \"{\\\"epoch\\\": $i}\" >> logs.json.txt; done")
    handle = sch.start(job)
    first = wait_for(lambda: (s := sch.poll(handle)).done and s)
    assert [json.loads(x)["epoch"] for x in first.new_log.splitlines()] == [0, 1, 2]
    offset = len(first.new_log.splitlines()[0]) + 1
    assert sch.poll(handle, offset).new_log.splitlines()[0] == '{"epoch": 1}'
    handle = sch.start(job)
    wait_for(lambda: sch.poll(handle).done)
    assert (tmp_path / "j" / "attempts" / "1" / "logs.json.txt").is_file()
    assert len((tmp_path / "j" / "logs.json.txt").read_text().splitlines()) == 3


@pytest.mark.slow
def test_reattach_checks_the_start_time_of_the_pid(tmp_path):
    sch = scheduler_for("local:cpu", {})
    handle = sch.start(make_job(tmp_path, "sleep 30"))
    assert sch.poll(handle, 0).state == "running"
    pid_file = tmp_path / "j" / "pid"
    pid, start = pid_file.read_text().split()
    pid_file.write_text(f"{pid} {int(start) + 1}\n")  # as if the pid now named another process
    assert sch.poll(handle, 0).state == "lost"
    pid_file.write_text(f"{pid} {start}\n")
    sch.stop(handle)


def test_probe_parsing_treats_zombies_and_missing_folders(tmp_path):
    from imf.scheduler import wrapper
    assert parse_probe(wrapper.probe(tmp_path / "none", 0, 100)).state == "absent"
    base = {"exists": True, "pid": 10, "start_time": "99", "token": "t", "log_size": 12,
            "out_size": 0, "new_log": '{"epoch": 0}', "exit_code": None, "exit_token": None}
    assert parse_probe({**base, "alive": False}).state == "lost"  # a zombie, or another start time
    alive = parse_probe({**base, "alive": True}, "t")
    assert alive.state == "running" and alive.log_size == 12 and alive.new_log == '{"epoch": 0}'
    assert parse_probe({**base, "alive": True}, "other").state == "absent"  # another attempt's files
    done = parse_probe({**base, "alive": False, "exit_code": 137, "exit_token": "t"}, "t")
    assert done.state == "exited" and done.exit_code == 137
    stale = parse_probe({**base, "alive": False, "exit_code": 0, "exit_token": "old"}, "t")
    assert stale.state == "lost"  # an exit file of an earlier attempt is not this one's end


@pytest.mark.slow
def test_the_wrapper_writes_pid_stdout_and_exit_files_and_archives_the_attempt_before(tmp_path):
    import io
    from imf.scheduler import wrapper
    folder = tmp_path / "j"
    folder.mkdir()
    (folder / "stdout.log").write_text("an earlier attempt\n")
    out = io.BytesIO()
    assert wrapper.start(folder, "t1", {"GREETING": "hi"}, ["sh", "-c", "echo $GREETING; exit 3"],
                         out, io.StringIO()) == 0
    pid, start, token = out.getvalue().decode().split()
    assert token == "t1" and (folder / "attempts" / "1" / "stdout.log").read_text() == "an earlier attempt\n"
    deadline = time.monotonic() + 60
    while wrapper.exit_code_of(folder, "t1") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert wrapper.exit_code_of(folder, "t1") == 3 and wrapper.exit_code_of(folder, "t0") is None
    assert (folder / "stdout.log").read_text() == "hi\n"
    assert (folder / "pid").read_text().split() == [pid, start, "t1"]


def test_bad_environment_names_and_specs_are_rejected(tmp_path):
    with pytest.raises(QueueError):
        scheduler_for("local:cpu", {"env": {"BAD NAME": "x"}}).start(make_job(tmp_path, "true"))
    with pytest.raises(QueueError, match="local:N"):
        scheduler_for("local:", {})
    assert not (tmp_path / "j").exists()  # nothing started


@pytest.mark.parametrize("name", ["A B", "1A", "A\n", ""])
def test_a_bad_environment_variable_name_is_refused_before_anything_starts(tmp_path, name):
    job = make_job(tmp_path, "true")
    job.env = {name: "1"}
    with pytest.raises(QueueError, match="invalid environment variable name"):
        scheduler_for("local:cpu", {}).start(job)
    assert not (tmp_path / "j").exists()


@pytest.mark.slow
def test_a_job_whose_wrapper_is_still_exiting_does_not_hold_its_folder(tmp_path):
    # the exit file is the wrapper's last write: a start right after it must not read "busy"
    import io
    import os
    from imf.scheduler import wrapper
    folder = tmp_path / "j"
    folder.mkdir()
    me = os.getpid()  # a live process standing in for a wrapper that has not exited yet
    (folder / "pid").write_text(f"{me} {wrapper.process_start_time(me)} t1\n")
    (folder / "exit_code").write_text("0 t1\n")
    assert wrapper.read_files(folder).alive() and wrapper.read_files(folder).ended()
    wrapper.stop(folder, 0.1, "t1")  # nothing to stop: this process lives on
    out = io.BytesIO()
    assert wrapper.start(folder, "t2", {}, ["true"], out, io.StringIO()) == 0
    assert out.getvalue().split()[2] == b"t2" and (folder / "attempts" / "1" / "exit_code").is_file()


@pytest.mark.parametrize("argv, says", [([], "usage"), (["probe", "/tmp"], "probe DIR OFFSET LIMIT"),
                                        (["start", "/tmp/x", "t"], "no -- before the command"),
                                        (["run", "t", "A", "--", "true"], "'A' is not K=V"),
                                        (["fetch", "/tmp"], "unknown command 'fetch'")])
def test_bad_wrapper_arguments_are_one_line_and_exit_2(argv, says):
    import io
    from imf.scheduler import wrapper
    err = io.StringIO()
    assert wrapper.main(argv, io.BytesIO(), err) == 2
    assert says in err.getvalue() and err.getvalue().count("\n") == 1
