"""The queue loop with real processes (the stand-in trial) on local:cpu slots, and fault drills."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _sweep_helpers import fake_command, sweep_controller, wait_for

from imf.errors import QueueError
from imf.scheduler.base import JobRequest
from imf.sweep.engine import Engine
from imf.scheduler.local import LocalScheduler
from imf.sweep.folder import SweepDir
from imf.sweep.status import render_status
from imf.sweep.launch import SweepRequest, plan_sweep, resume_sweep, start_sweep
from imf.store.scoreboard import ScoreboardStore

pytestmark = pytest.mark.slow  # starts processes or trains: not in the unit tier

REPORT_FILES = ("report.md", "report.json", "report.csv", "heatmap.png")


def request(tmp_path: Path, **kw) -> SweepRequest:
    base = dict(config="smoke", grids=["64,128x1,2"], queues=["local:cpu", "local:cpu"], name="t",
                out=tmp_path, epochs=4, poll=0.1, stall_timeout=20.0)
    return SweepRequest(**{**base, **kw})


def sweep_json(sweep_dir: Path) -> dict:
    return json.loads((sweep_dir / "sweep.json").read_text())


def assert_finished(sweep_dir: Path, states: dict[str, str] | None = None, n: int = 4) -> dict:
    """sweep.json, stores and report agree that every trial ended once, as expected."""
    data = sweep_json(sweep_dir)
    assert data["status"] == "finished"
    assert len(data["trials"]) == n
    want = states or {}
    for t in data["trials"]:
        assert t["state"] == want.get(t["id"], "completed"), t
        assert t["recorded"]
    records = ScoreboardStore(sweep_dir).read()
    assert sorted(r["id"] for r in records) == sorted(t["id"] for t in data["trials"])
    for r in records:
        assert r["status"] == want.get(r["id"], "completed")
    log = (sweep_dir / "ITERATION_LOG.md").read_text()
    assert all(t["id"] in log for t in data["trials"])
    for name in REPORT_FILES:
        assert (sweep_dir / name).is_file(), name
    return data


def test_a_sweep_runs_every_trial_records_reports_and_notifies(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.05"))
    lines: list[str] = []
    notify = f"{sys.executable} -c \"import sys, pathlib; pathlib.Path(sys.argv[1] + '.seen').write_text('x')\""
    engine = start_sweep(request(tmp_path, notify=notify), lines.append)
    sweep_dir = tmp_path / "t"
    data = assert_finished(sweep_dir)
    assert all(t["attempts"] == 1 and t["epoch"] == 4 and t["best_score"] for t in data["trials"])
    assert {t["queue"] for t in data["trials"]} == {"local:cpu", "local:cpu#2"}
    assert engine.report_text and "t-causal-e128-l2-s42" in engine.report_text
    assert any("rank" in line for line in lines)  # the report is printed
    assert (sweep_dir / "report.md.seen").exists()
    log = (sweep_dir / "sweep.log").read_text()
    assert log.count(" start ") == 4 and "report written" in log and "notified" in log
    record = next(r for r in ScoreboardStore(sweep_dir).read() if r["id"] == "t-causal-e64-l1-s42")
    assert Path(record["checkpoint"]).is_file()
    table = render_status(SweepDir(sweep_dir))
    assert "4/4 ended" in table and "t-causal-e64-l2-s42" in table and "4/4" in table
    assert "val_mse" in table and "0.1250" in table  # the last epoch's val_mse, 0.5 / 4


def test_local_cpu_slots_set_threads_and_hide_gpus(tmp_path, monkeypatch):
    script = tmp_path / "envtrial.py"
    script.write_text(
        "import json, os, sys\n"
        "out = sys.argv[sys.argv.index('--out') + 1]\n"
        "tid = sys.argv[sys.argv.index('--id') + 1]\n"
        "env = {k: os.environ.get(k) for k in ('CUDA_VISIBLE_DEVICES', 'OMP_NUM_THREADS')}\n"
        "open(os.path.join(out, 'logs.json.txt'), 'w').write(json.dumps({'epoch': 0, 'test_mean_score': 0.5}) + '\\n')\n"
        "json.dump({'id': tid, 'status': 'completed', 'best_score': 0.5, 'epochs_done': 1, 'env': env},"
        " open(os.path.join(out, 'summary.json'), 'w'))\n")
    monkeypatch.setenv("IMF_TRIAL_COMMAND", f"{{python}} {script}")
    start_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu", "local:cpu"]), lambda s: None)
    summary = json.loads((tmp_path / "t" / "t-causal-e64-l1-s42" / "summary.json").read_text())
    assert summary["env"]["CUDA_VISIBLE_DEVICES"] == ""
    assert summary["env"]["OMP_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // 2))


def test_a_trial_killed_with_sigkill_is_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.3"))
    req = request(tmp_path, grids=["64x1,2"], queues=["local:cpu"], epochs=3)
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _run(req, errors))
    thread.start()
    victim = tmp_path / "t" / "t-causal-e64-l2-s42"
    pid = int(wait_for(lambda: (victim / "fake.pid").is_file() and (victim / "fake.pid").read_text()))
    wait_for(lambda: (victim / "logs.json.txt").is_file())
    os.kill(pid, signal.SIGKILL)
    thread.join(60)
    assert not errors and not thread.is_alive()
    data = assert_finished(tmp_path / "t", n=2)
    trial = next(t for t in data["trials"] if t["id"] == victim.name)
    assert trial["attempts"] == 2
    assert trial["history"][0]["outcome"] == "failed" and trial["history"][0]["exit_code"] == 137
    assert (victim / "attempts" / "1" / "stdout.log").is_file()


def _run(req: SweepRequest, errors: list[BaseException]) -> None:
    try:
        start_sweep(req, lambda s: None)
    except BaseException as exc:  # surfaced by the test thread
        errors.append(exc)


# Stall timeouts leave room for a loaded 2-core machine, where a stand-in trial may take a
# few seconds to start writing; a shorter timeout would stall healthy trials there.
STALL_S = 8.0


def test_a_hanging_trial_is_stalled_within_the_timeout_then_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.05", "--hang-on", "e64-l1"))
    start_sweep(request(tmp_path, grids=["64x1,2"], stall_timeout=STALL_S), lambda s: None)
    data = assert_finished(tmp_path / "t", n=2)
    trial = next(t for t in data["trials"] if t["id"] == "t-causal-e64-l1-s42")
    first = trial["history"][0]
    assert first["outcome"] == "stalled" and trial["attempts"] == 2
    run_dir = tmp_path / "t" / trial["id"] / "attempts" / "1"
    hung_since = (run_dir / "logs.json.txt").stat().st_mtime
    stalled_at = os.stat(run_dir).st_mtime  # the folder is made when the retry starts
    assert STALL_S <= stalled_at - hung_since < STALL_S + 20.0
    pid = int((run_dir / "fake.pid").read_text())
    assert not _alive(pid)  # the hanging process was killed


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_retries_exhausted_end_failed_and_stalled_with_their_summaries(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command(
        "--epoch-s", "0.05", "--fail-on", "e64-l1", "--hang-on", "e64-l2", "--fail-times", "9"))
    start_sweep(request(tmp_path, grids=["64x1,2,3"], retries=0, stall_timeout=STALL_S), lambda s: None)
    states = {"t-causal-e64-l1-s42": "failed", "t-causal-e64-l2-s42": "stalled"}
    data = assert_finished(tmp_path / "t", states, n=3)
    for tid, state in states.items():
        summary = json.loads((tmp_path / "t" / tid / "summary.json").read_text())
        assert summary["status"] == state and summary["id"] == tid
        assert next(t for t in data["trials"] if t["id"] == tid)["attempts"] == 1
    failed = next(t for t in data["trials"] if t["id"] == "t-causal-e64-l1-s42")
    assert "exit code 3" in failed["reason"] and "failing on purpose" in failed["reason"]


def test_the_controller_killed_mid_sweep_and_resumed_runs_every_trial_once(tmp_path):
    controller = sweep_controller(tmp_path, "t", ["--epoch-s", "0.4"], "--grid", "64x1,2,3", "--queue",
                                  "local:cpu", "--queue", "local:cpu", "--epochs", "3", "--poll", "0.1",
                                  "--stall-timeout", "30")
    sweep_dir = tmp_path / "t"

    def some_done_some_running() -> bool:
        try:
            states = [t["state"] for t in sweep_json(sweep_dir)["trials"]]
        except (OSError, ValueError):
            return False
        return "completed" in states and "running" in states
    wait_for(some_done_some_running, timeout=60, interval=0.02)
    controller.kill()
    controller.wait()
    killed = sweep_json(sweep_dir)["trials"]
    running = [t["id"] for t in killed if t["state"] == "running"]
    assert running
    lines: list[str] = []
    resume_sweep(sweep_dir, lines.append)
    data = assert_finished(sweep_dir, n=3)
    for t in data["trials"]:
        assert t["attempts"] == 1 and not t["history"][1:], t
        assert not (sweep_dir / t["id"] / "attempts").exists()
    log = (sweep_dir / "sweep.log").read_text()
    # each trial started once: a trial killed while "starting" is re-attached, not started again
    # (its start line may be in the log already: the controller logs it just before saving)
    for t in data["trials"]:
        assert log.count(f" start {t['id']} ") <= 1
        assert f" start {t['id']} " in log or f"re-attached {t['id']}" in log
    assert all(f"re-attached {tid}" in log for tid in running)


def test_a_sweep_json_of_an_older_imf_without_handle_dir_and_token_resumes(tmp_path):
    # imf before attempt tokens kept only queue, pid and start time in a handle: a controller
    # killed then must still re-attach its running trial, not start it again
    controller = sweep_controller(tmp_path, "t", ["--epoch-s", "0.5"], "--grid", "64x1", "--queue",
                                  "local:cpu", "--epochs", "4", "--poll", "0.1")
    sweep_dir = tmp_path / "t"
    wait_for(lambda: (sweep_dir / "sweep.json").is_file() and
             [t for t in sweep_json(sweep_dir)["trials"] if t["state"] == "running"], timeout=60)
    controller.kill()
    controller.wait()
    data = sweep_json(sweep_dir)
    for trial in data["trials"]:
        trial["handle"] = {k: trial["handle"][k] for k in ("queue", "pid", "start_time")}
    (sweep_dir / "sweep.json").write_text(json.dumps(data))
    resume_sweep(sweep_dir, lambda s: None)
    data = assert_finished(sweep_dir, n=1)
    (trial,) = data["trials"]
    assert trial["attempts"] == 1 and not (sweep_dir / trial["id"] / "attempts").exists()
    log = (sweep_dir / "sweep.log").read_text()
    assert f"re-attached {trial['id']}" in log
    # the handle was completed once, before re-attaching, and the log says so
    assert log.count("a handle saved by an imf before handles held the job's folder") == 1


def test_resume_of_a_finished_sweep_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01"))
    start_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]), lambda s: None)
    resume_sweep(tmp_path / "t", lambda s: None)
    assert (tmp_path / "t" / "sweep.log").read_text().count(" start ") == 1
    assert_finished(tmp_path / "t", n=1)
    with pytest.raises(Exception, match="already holds a sweep"):
        start_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]), lambda s: None)


class _VanishingHost(LocalScheduler):
    """A slot whose machine stops answering after its first job started (that job only sleeps)."""

    def start(self, job):
        if getattr(self, "started", None):
            raise QueueError(f"queue '{self.spec}': host unreachable: gone")
        self.started = super().start(JobRequest(job.trial_id, job.sweep, job.run_dir, ["sleep", "60"], job.config))
        return self.started

    def poll(self, handle, offset=0):
        raise QueueError(f"queue '{self.spec}': host unreachable: gone")


def test_a_host_lost_mid_sweep_goes_down_and_its_trials_finish_on_the_live_queue(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.05"))
    sdir, state, _ = plan_sweep(request(tmp_path, grids=["64x1,2,3,4"]))
    sdir.save(state)
    engine = Engine(sdir, state, lambda s: None)
    lost = engine.schedulers["local:cpu#2"] = _VanishingHost("local:cpu", {})
    try:
        engine.run()
    finally:
        if getattr(lost, "started", None) and _alive(lost.started.pid):
            os.killpg(lost.started.pid, signal.SIGKILL)
    # the live queue shares its folder: the lost job there is stopped before the trial restarts
    assert not _alive(lost.started.pid)
    assert "killed the orphan" in (sdir.path / "sweep.log").read_text()
    data = assert_finished(sdir.path)
    assert data["queues"][1]["state"] == "down" and "unreachable" in data["queues"][1]["reason"]
    assert all(t["queue"] == "local:cpu" for t in data["trials"])
    moved = [t for t in data["trials"] if t["history"] and t["history"][0]["outcome"] == "queue down"]
    assert len(moved) == 1 and moved[0]["history"][-1]["outcome"] == "completed"


def test_a_spec_of_several_slots_is_checked_once(tmp_path, monkeypatch):
    checked: list[str] = []  # one sinfo for slurm://gpu?slots=8, not eight
    monkeypatch.setattr(LocalScheduler, "check", lambda self: checked.append(self.spec))
    probed: list[str] = []  # one GPU probe per host: local:0 and local:1 share this machine's
    monkeypatch.setattr(LocalScheduler, "probe_gpus", lambda self: probed.append(self.spec) or {
        "devices": [{"index": i, "name": "Fake", "free_mib": 1, "total_mib": 2} for i in (0, 1)]})
    sdir, state, _ = plan_sweep(request(tmp_path, queues=["local:cpu", "local:cpu", "local:0", "local:1"]))
    Engine(sdir, state, lambda s: None).queue_health.check_queues()
    assert checked == ["local:cpu", "local:0", "local:1"]
    assert probed == ["local:0"] and all(q.state == "live" for q in state.queues)


def test_status_command_prints_the_table_and_watch_returns_when_done(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01"))
    start_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]), lambda s: None)
    for extra in ([], ["--watch", "--interval", "0.1"]):
        proc = subprocess.run([sys.executable, "-m", "imf", "status", str(tmp_path), *extra],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        header, columns, row = proc.stdout.strip().splitlines()[:3]
        assert "1/1 ended" in header and columns.split()[:4] == ["queue", "trial", "state", "epoch"]
        assert row.split()[:4] == ["local:cpu", "t-causal-e64-l1-s42", "completed", "4/4"]


def test_ctrl_c_stops_launching_leaves_trials_running_and_resume_finishes(tmp_path):
    # The trial holds at a gate until the test has seen it outlive its controller: a trial of a
    # few timed epochs could end first on a loaded machine (CI: the pid was gone by the check).
    gate = tmp_path / "go"
    env = {**os.environ, "IMF_TRIAL_COMMAND": fake_command("--epoch-s", "0.2", "--gate", str(gate))}
    cmd = [sys.executable, "-m", "imf", "sweep", "smoke", "--grid", "64x1,2", "--queue", "local:cpu",
           "--name", "t", "--out", str(tmp_path), "--epochs", "4", "--poll", "0.1"]
    # Ctrl-C as a terminal sends it: the child gets the default SIGINT disposition whatever
    # this test process inherited (a shell that started pytest in the background ignores it).
    controller = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    sweep_dir = tmp_path / "t"
    wait_for(lambda: (sweep_dir / "sweep.json").is_file()
             and any(t["state"] == "running" for t in sweep_json(sweep_dir)["trials"]), timeout=60)
    controller.send_signal(signal.SIGINT)
    _, err = controller.communicate(timeout=30)
    assert controller.returncode == 130 and "--resume" in err
    data = sweep_json(sweep_dir)
    assert data["status"] == "interrupted"
    running = [t for t in data["trials"] if t["state"] == "running"]
    assert len(running) == 1 and [t["state"] for t in data["trials"]].count("pending") == 1
    assert _alive(running[0]["handle"]["pid"])  # the trial goes on without its controller
    gate.touch()
    resume_sweep(sweep_dir, lambda s: None)
    data = assert_finished(sweep_dir, n=2)
    assert all(t["attempts"] == 1 for t in data["trials"])


def test_a_second_controller_on_the_same_sweep_is_refused(tmp_path, monkeypatch):
    from filelock import FileLock

    from imf.errors import SweepError
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01"))
    sdir, state, _ = plan_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]))
    sdir.save(state)
    with FileLock(str(sdir.path / "sweep.lock")):
        with pytest.raises(SweepError, match="another controller"):
            resume_sweep(sdir.path, lambda s: None)
    assert sweep_json(sdir.path)["trials"][0]["state"] == "pending"


def test_an_idle_queue_takes_waiting_work_from_a_busy_one(tmp_path, monkeypatch):
    # The cost model puts e512-l40 alone on one queue and the three small trials on the other;
    # the stand-in trials all take the same time, so the first queue idles unless it steals.
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.15"))
    plan_queues = plan_sweep(request(tmp_path, grids=["64,512x1,40"]))
    start_sweep(request(tmp_path, grids=["64,512x1,40"]), lambda line: None)
    data = assert_finished(tmp_path / "t")
    by_id = {t["id"]: t for t in data["trials"]}
    big_queue = by_id["t-causal-e512-l40-s42"]["queue"]
    on_big_queue = [tid for tid, t in by_id.items() if t["queue"] == big_queue]
    assert len(on_big_queue) == 2, (on_big_queue, plan_queues)
    log = (tmp_path / "t" / "sweep.log").read_text()
    assert f"to idle {big_queue}" in log
    assert all(t["attempts"] == 1 for t in data["trials"])  # moved, never run twice


@pytest.mark.parametrize("corrupt, words", [
    (lambda f: f.write_bytes(b"\xff\xfe"), "unreadable sweep state"),
    (lambda f: f.write_text(f.read_text().replace('"queue": "local:cpu"', '"queue": "gone"')),
     "on queue 'gone', which the sweep does not have"),
])
def test_a_corrupt_sweep_json_is_one_error_line_for_status_and_resume(tmp_path, corrupt, words):
    sdir, state, _ = plan_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]))
    sdir.save(state)
    corrupt(sdir.state_file)
    for args in (["status", str(sdir.path)], ["sweep", "--resume", str(sdir.path)]):
        proc = subprocess.run([sys.executable, "-m", "imf", *args], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("imf: error: ") and words in proc.stderr


def test_bad_resume_and_watch_values_are_errors_not_ignored(tmp_path):
    from imf.errors import SweepError
    from imf.sweep.live import watch
    sdir, state, _ = plan_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]))
    sdir.save(state)
    for kwargs in ({"poll": 0}, {"stall_timeout": 0.0}, {"retries": -1}):
        with pytest.raises(SweepError, match="must be a finite number"):
            resume_sweep(sdir.path, lambda s: None, **kwargs)
    for interval in (0, -1, float("nan")):
        with pytest.raises(SweepError, match="--interval"):
            watch(sdir.path, interval, lambda s: None, sleep=lambda s: None)
    assert sweep_json(sdir.path)["status"] == "planned"


def test_a_sweep_whose_config_file_is_gone_stops_cleanly_and_can_resume(tmp_path, monkeypatch):
    from imf.errors import SweepError
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01"))
    config = tmp_path / "mine.yaml"
    config.write_text("base: smoke\n")
    sdir, state, _ = plan_sweep(request(tmp_path, config=str(config), grids=["64x1"], queues=["local:cpu"]))
    state.config = str(config)
    sdir.save(state)
    config.unlink()
    with pytest.raises(SweepError, match="cannot read the sweep's config"):
        resume_sweep(sdir.path, lambda s: None)
    data = sweep_json(sdir.path)
    assert data["status"] == "stopped" and data["trials"][0]["state"] == "pending"
    config.write_text("base: smoke\n")
    resume_sweep(sdir.path, lambda s: None)
    assert_finished(sdir.path, n=1)


def _edit(change):
    def corrupt(path: Path) -> None:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    return corrupt


@pytest.mark.parametrize("corrupt, words", [
    (_edit(lambda d: d.update(poll="fast")), "'poll' must be a number"),
    (_edit(lambda d: d.update(trials=5)), "'trials' must be a list"),
    (_edit(lambda d: d["trials"][0].update(epochs="x")), "trials[0] 'epochs' must be an int"),
    (_edit(lambda d: d["trials"][0].update(handle=5)), "trials[0] 'handle' must be"),
    (_edit(lambda d: d["trials"][0].update(state="running", handle={"dir": 5})),
     "trials[0] handle 'dir' must be a string or null, got 5"),
    (_edit(lambda d: d["trials"][0].update(orphans=[{"queue": "local:cpu", "handle": {"pid": "x"}}])),
     "trials[0] orphans[0] handle 'pid' must be an int or null"),
    (_edit(lambda d: d["trials"][0].update(state="weird")), "trials[0] state 'weird'"),
    (_edit(lambda d: d["queues"][0].update(spec="nope://x/cpu")), "unknown scheduler 'nope'"),
    (_edit(lambda d: d["queues"].append(5)), "queues[1] must be an object"),
    (_edit(lambda d: d.update(stall_timeout=-1)), "'stall_timeout' must be"),
    (lambda f: f.write_text("[1, 2]"), "must be a JSON object"),
])
def test_a_wrong_typed_sweep_json_is_one_line_and_leaves_the_sweep_as_it_was(tmp_path, corrupt, words):
    sdir, state, _ = plan_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]))
    sdir.save(state)
    corrupt(sdir.state_file)
    before = sdir.state_file.read_bytes()
    for args in (["status", str(sdir.path)], ["sweep", "--resume", str(sdir.path)]):
        proc = subprocess.run([sys.executable, "-m", "imf", *args], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("imf: error: ") and words in proc.stderr, proc.stderr
        assert sdir.state_file.read_bytes() == before


def test_a_controller_removes_temps_left_by_killed_writers_in_its_sweep_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01"))
    start_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]), lambda s: None)
    sweep_dir = tmp_path / "t"
    state_temp = sweep_dir / ".sweep.json.k1.tmp"  # a controller killed a moment ago
    state_temp.write_text("{")
    old = sweep_dir / ".report.md.k2.tmp"
    old.write_text("half")
    os.utime(old, (0, 0))
    keep = sweep_dir / ".report.md.k3.tmp"  # young: perhaps another process is writing it
    keep.write_text("half")
    resume_sweep(sweep_dir, lambda s: None)
    assert not state_temp.exists() and not old.exists() and keep.exists()


def test_a_corrupt_scoreboard_at_the_end_is_an_error_on_stderr_not_only_in_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("IMF_TRIAL_COMMAND", fake_command("--epoch-s", "0.01"))
    start_sweep(request(tmp_path, grids=["64x1"], queues=["local:cpu"]), lambda s: None)
    board = tmp_path / "t" / "scoreboard.json"
    board.write_text("{")
    proc = subprocess.run([sys.executable, "-m", "imf", "sweep", "--resume", str(tmp_path / "t")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: ") and "scoreboard" in lines[0], proc.stderr
    assert "is corrupt" in lines[0] and board.read_text() == "{"
