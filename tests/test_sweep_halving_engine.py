"""Successive halving through the real engine: stand-in trials with planted curves on local:cpu
slots, a controller restart in the middle, and the bad flags through the real command line."""
from __future__ import annotations

import json
import math
import signal
import statistics
from pathlib import Path

import pytest
from _sweep_helpers import fake_command, sweep_controller, wait_for
from imf_process import run_imf

from imf.errors import QueueError
from imf.scheduler.local import LocalScheduler
from imf.store.scoreboard import ScoreboardStore
from imf.sweep.halving import stop_z
from imf.sweep.launch import SweepRequest, plan_sweep, resume_sweep, start_sweep
from imf.sweep.folder import SweepDir
from imf.sweep.status import render_status

pytestmark = pytest.mark.slow  # starts processes: not in the unit tier

HALF = [1.0, 0.0] * 10  # mean 0.5
LOW = [0.0] * 18 + [1.0, 1.0]  # mean 0.1: clearly below 0.5 with 20 episodes
NEAR = [1.0, 0.0] * 8 + [0.0] * 4  # mean 0.4: below 0.5, but within noise


def request(tmp_path: Path, seeds: str, epochs: int, **kw) -> SweepRequest:
    base = dict(config="smoke", grids=[f"seed={seeds}"], queues=["local:cpu", "local:cpu"], name="h",
                out=tmp_path, epochs=epochs, poll=0.1, stall_timeout=60.0, halving=2, rungs="2,4")
    return SweepRequest(**{**base, **kw})


def plant(tmp_path: Path, req: SweepRequest, curves: dict[str, list[float]], epoch_s: float) -> dict:
    """Every trial's rollouts at epochs 2, 4, ... from ``curves`` (by seed suffix); the plan."""
    _, state, plan = plan_sweep(req)
    rollouts = {t.id: {str(e): curves[t.id.rsplit("-", 1)[1]] for e in range(2, t.epochs + 1, 2)}
                for t in state.trials}
    path = tmp_path / "plant.json"
    path.write_text(json.dumps(rollouts))
    return {"command": fake_command("--epoch-s", str(epoch_s), "--plant", str(path)), "plan": plan}


def diff_se(a: list[float], b: list[float]) -> float:
    return math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))


def by_id(sweep_dir: Path) -> dict[str, dict]:
    return {t["id"]: t for t in json.loads((sweep_dir / "sweep.json").read_text())["trials"]}


def test_a_clearly_worse_trial_is_stopped_at_the_rung_and_its_slot_takes_the_next(tmp_path, monkeypatch):
    req = request(tmp_path, "1,2,3,4,5", epochs=6)
    # s3 clearly worse; s4 below the others but within noise (a tie); the rest equal (ties)
    planted = plant(tmp_path, req, {"s1": HALF, "s2": HALF, "s3": LOW, "s4": NEAR, "s5": HALF}, 0.4)
    order = planted["plan"].order
    queue, = [q for q, ids in order.items() if len(ids) == 3]
    worse, after = order[queue][1], order[queue][2]
    assert worse.endswith("-s3")  # the plan puts the worse trial second on the queue of three
    monkeypatch.setenv("IMF_TRIAL_COMMAND", planted["command"])
    start_sweep(req, lambda line: None)
    sweep_dir = tmp_path / "h"
    trials = by_id(sweep_dir)
    decided = json.loads((sweep_dir / "sweep.json").read_text())["halving"]["decisions"]
    compared = next(d["compared"] for d in decided if d["trial"] == worse)  # 2..5, by arrival
    below = compared - compared // 2
    reason = (f"halving at epoch 2: {0.4:.4f} +- {diff_se(HALF, LOW):.4f} below the cut {0.5:.4f}, "
              f"beyond {stop_z(below):.2f} SE ({below} trial{'s' if below != 1 else ''} below the cut)")
    stopped = trials[worse]
    assert stopped["state"] == "stopped_early" and stopped["reason"] == reason
    assert stopped["attempts"] == 1 and [h["outcome"] for h in stopped["history"]] == ["stopped_early"]
    assert 2 <= stopped["epoch"] < 6
    assert all(t["state"] == "completed" for tid, t in trials.items() if tid != worse), trials
    log = (sweep_dir / "sweep.log").read_text().splitlines()
    at = next(i for i, line in enumerate(log) if f"stopped_early {worse} " in line)
    assert reason in log[at]
    nxt = next(line for line in log[at + 1:] if " start " in line or queue in line)
    assert f"start {after} on {queue} (attempt 1" in nxt  # the freed slot took the next trial
    assert not any("retry" in line and worse in line for line in log)
    decisions = json.loads((sweep_dir / "sweep.json").read_text())["halving"]["decisions"]
    near = next(t for t in trials if t.endswith("-s4"))
    assert {d["outcome"] for d in decisions if d["trial"] == near} == {"kept"}
    assert any("tied within noise" in d["reason"] for d in decisions if d["trial"] == near)
    record = next(r for r in ScoreboardStore(sweep_dir).read() if r["id"] == worse)
    assert record["status"] == "stopped_early" and record["stopped_early"] and reason in record["note"]
    assert f"- {worse} at epoch" in (sweep_dir / "report.md").read_text()
    status = render_status(SweepDir(sweep_dir))
    assert f"{worse} stopped_early: {reason}" in status and "1 stopped" in status


def test_a_stop_decided_before_the_controller_stopped_is_carried_out_after_resume(tmp_path, monkeypatch):
    """The controller saves the stop decision, cannot stop the job (its host does not answer),
    and is interrupted; the resumed controller stops the job with the same reason, decides
    nothing again and never retries the trial."""
    req = request(tmp_path, "1,2", epochs=40, rungs="2")
    planted = plant(tmp_path, req, {"s1": HALF, "s2": LOW}, 0.25)
    monkeypatch.setenv("IMF_TRIAL_COMMAND", planted["command"])
    real_stop = LocalScheduler.stop
    calls: list[str] = []

    def unreachable(self, handle):
        calls.append(handle.token)
        raise QueueError("host does not answer (injected)")

    def interrupt_once_refused(seconds: float) -> None:
        if calls:
            raise KeyboardInterrupt
    monkeypatch.setattr(LocalScheduler, "stop", unreachable)
    sdir, state, _ = plan_sweep(req)
    sdir.save(state)
    from imf.sweep.engine import Engine
    with pytest.raises(KeyboardInterrupt):
        Engine(sdir, state, lambda line: None, sleep=interrupt_once_refused).run()
    before = json.loads(sdir.state_file.read_text())
    worse = next(t["id"] for t in before["trials"] if t["id"].endswith("-s2"))
    assert before["status"] == "interrupted" and by_id(sdir.path)[worse]["state"] == "running"
    decided = before["halving"]["decisions"]
    assert [d["outcome"] for d in decided if d["trial"] == worse] == ["stopped"]
    monkeypatch.setattr(LocalScheduler, "stop", real_stop)
    resume_sweep(sdir.path, lambda line: None)
    after = json.loads(sdir.state_file.read_text())
    trial = by_id(sdir.path)[worse]
    assert trial["state"] == "stopped_early" and trial["attempts"] == 1
    assert trial["reason"] == decided[[d["trial"] for d in decided].index(worse)]["reason"]
    assert trial["epoch"] < 40
    assert after["halving"]["decisions"][:len(decided)] == decided  # the same entries, same times
    assert len({(d["trial"], d["rung"]) for d in after["halving"]["decisions"]}) == len(after["halving"]["decisions"])
    log = (sdir.path / "sweep.log").read_text()
    assert log.count(f"stopped_early {worse} ") == 1 and f"start {worse}" in log
    assert log.count(f"start {worse} ") == 1


@pytest.mark.parametrize("args, words", [
    (["--halving", "1", "--rungs", "2"], "--halving 1: ETA must be an integer >= 2"),
    (["--halving", "2", "--rungs", "4,2"], "--rungs '4,2': expected strictly increasing epochs"),
    (["--halving", "2", "--rungs", "2,9"], "rung 9 is beyond the 4 epochs of trial"),
    (["--rungs", "2"], "--rungs needs --halving ETA"),
    (["--halving", "2"], "--halving 2 needs --rungs"),
    (["--halving", "2", "--rungs", "3", "training.rollout_every=2"], "epoch 3 has no rollout score"),
])
def test_bad_halving_flags_are_one_line_on_stderr_and_write_nothing(tmp_path, args, words):
    proc = run_imf("sweep", "smoke", "--grid", "64x1", "--epochs", "4", "--queue", "local:cpu",
                   "--out", str(tmp_path / "runs"), *args, env={"IMF_TRIAL_COMMAND": "false"})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: ") and words in lines[0], lines
    assert not (tmp_path / "runs").exists()


def test_resume_refuses_new_halving_flags(tmp_path):
    proc = run_imf("sweep", "--resume", str(tmp_path), "--halving", "2", "--rungs", "2")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "drop --halving, --rungs" in lines[0], lines


def test_a_controller_killed_after_a_decision_and_resumed_decides_nothing_again(tmp_path):
    req = request(tmp_path, "1,2,3", epochs=12, name="k")
    planted = plant(tmp_path, req, {"s1": HALF, "s2": LOW, "s3": HALF}, 0.4)
    trial_opts = planted["command"].split()[2:]  # the stand-in's options after "{python} FAKE"
    proc = sweep_controller(tmp_path, "k", trial_opts, "--grid", "seed=1,2,3", "--queue", "local:cpu",
                            "--queue", "local:cpu", "--epochs", "12", "--poll", "0.1",
                            "--halving", "2", "--rungs", "2,4")
    state_file = tmp_path / "k" / "sweep.json"

    def decided() -> list | None:
        try:
            data = json.loads(state_file.read_text())
        except (OSError, ValueError):
            return None
        return (data.get("halving") or {}).get("decisions") or None
    try:
        wait_for(lambda: any(d["outcome"] == "stopped" for d in decided() or []), timeout=120)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    before = decided()
    resume_sweep(tmp_path / "k", lambda line: None)
    data = json.loads(state_file.read_text())
    after = data["halving"]["decisions"]
    assert after[:len(before)] == before  # the same entries, with the same times
    assert len({(d["trial"], d["rung"]) for d in after}) == len(after)
    trials = {t["id"]: t for t in data["trials"]}
    for d in after:
        if d["outcome"] == "stopped":
            assert trials[d["trial"]]["state"] == "stopped_early" and trials[d["trial"]]["attempts"] == 1
    assert [t["state"] for t in data["trials"]].count("stopped_early") == 1
    log = (tmp_path / "k" / "sweep.log").read_text()
    stopped = next(d["trial"] for d in after if d["outcome"] == "stopped")
    assert log.count(f"start {stopped} ") == 1 and log.count(f"stopped_early {stopped} ") == 1
