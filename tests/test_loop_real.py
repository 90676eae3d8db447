"""``imf loop`` end to end with real tiny trials on CPU: two rounds, and the kill-and-resume drill."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _sweep_helpers import wait_for
from imf_process import run_imf

from imf.report import build_report
from imf.store.iteration_log import IterationLogStore

pytestmark = pytest.mark.slow

TINY = ["training.num_epochs=1", "training.max_train_steps=4", "eval.n_test=2", "eval.max_steps=8",
        "eval.n_train=0", "data.demo_episodes=4", "sweep.poll_interval=1"]


@pytest.fixture(scope="module")
def base_sweep(tmp_path_factory, demo_cache) -> Path:
    """A one-trial sweep with a score and its noise: what a loop starts from."""
    out = tmp_path_factory.mktemp("loop-base")
    proc = run_imf("sweep", "smoke", "--grid", "32x1", "--queue", "local:cpu", "--name", "base",
                   "--out", str(out), *TINY, f"data.cache_dir={demo_cache}", cwd=out, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out / "base"


def _copy(base: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "base"
    shutil.copytree(base, folder)
    return folder


def _round_trials(folder: Path, number: int) -> list[dict]:
    return json.loads((folder / f"loop-r{number:02d}" / "sweep.json").read_text())["trials"]


def test_a_two_round_loop_logs_runs_and_concludes_each_round(base_sweep, tmp_path):
    folder = _copy(base_sweep, tmp_path)
    proc = run_imf("loop", str(folder), "--rounds", "2", "--per-round", "1", "--queue", "local:cpu",
                   cwd=tmp_path, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    loop = json.loads((folder / "loop.json").read_text())
    assert loop["status"] == "finished" and loop["stop_reason"] == "2 round(s) done (--rounds 2)"
    assert [r["status"] for r in loop["rounds"]] == ["concluded", "concluded"]
    blocks = IterationLogStore(folder).hypotheses()
    assert [b["id"] for b in blocks] == ["H1", "H2"]
    for number, (block, round_) in enumerate(zip(blocks, loop["rounds"]), start=1):
        trial = _round_trials(folder, number)[0]
        assert trial["state"] == "completed" and trial["attempts"] == 1
        assert block["hypothesis"].startswith(f"imf loop round {number} (loop-r{number:02d})")
        assert trial["id"] in block["command"] and block["result"].startswith(f"{trial['id']}: ")
        assert block["conclusion"].startswith(f"{trial['id']}: ") and "best" in block["conclusion"]
        after, before = round_["best_after"], round_["best_before"]
        if round_["gain"]:  # a run better beyond noise raises the best cell's mean
            assert after["mean"] > before["mean"], round_
        moved = (after["label"], after["trial"]) != (before["label"], before["trial"])
        said = f"the best is now {after['label']}" if moved else f"the best stays {after['label']}"
        assert said in block["conclusion"], (round_, block["conclusion"])
        assert f"round {number} (loop-r{number:02d}, H{number}) against" in proc.stdout
    # the best after the last round is the folder's best cell, as imf report ranks it now
    cells = [c for c in build_report([folder]).trends.cells if c.mean is not None]
    top = max(cells, key=lambda c: c.mean)
    last = loop["rounds"][-1]["best_after"]
    assert (last["label"], last["n"]) == (top.label, top.n) and last["mean"] == pytest.approx(top.mean)
    assert any(line.startswith("loop finished") and f"best cell {top.label} " in line
               for line in proc.stdout.splitlines())
    # round 2 was planned on the folder after round 1: its proposal differs from round 1's
    ids = [r["proposals"][0]["id"] for r in loop["rounds"]]
    before, after = loop["rounds"][1]["best_before"], loop["rounds"][0]["best_after"]
    assert ids[0] != ids[1] and {k: before[k] for k in after} == after
    assert "loop finished: 2 round(s) done" in proc.stdout


def test_a_loop_killed_mid_round_resumes_it_exactly_once(base_sweep, tmp_path):
    folder = _copy(base_sweep, tmp_path)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SWANLAB_MODE": "offline"}
    loop = subprocess.Popen([sys.executable, "-m", "imf", "loop", str(folder), "--rounds", "1",
                             "--per-round", "1", "--queue", "local:cpu"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # the round's trial has started (its wrapper wrote the pid file): kill the loop
        wait_for(lambda: list(folder.glob("loop-r01/*/pid")), timeout=300)
    finally:
        loop.send_signal(signal.SIGKILL)
        loop.wait()
    time.sleep(0.5)
    assert json.loads((folder / "loop.json").read_text())["status"] == "running"
    proc = run_imf("loop", "--resume", str(folder), cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    state = json.loads((folder / "loop.json").read_text())
    assert state["status"] == "finished" and [r["status"] for r in state["rounds"]] == ["concluded"]
    (trial,) = _round_trials(folder, 1)
    assert trial["state"] == "completed" and trial["attempts"] == 1 and len(trial["history"]) == 1
    assert not (folder / "loop-r01" / trial["id"] / "attempts").exists()  # never started again
    blocks = IterationLogStore(folder).hypotheses()
    assert [b["id"] for b in blocks] == ["H1"] and blocks[0]["conclusion"]  # one block, concluded
    assert "resuming its sweep" in proc.stdout


def test_bad_loop_requests_are_one_line(base_sweep, tmp_path):
    folder = _copy(base_sweep, tmp_path)
    for args, words in [
        (["--rounds", "0", "--queue", "local:cpu"], "imf: error: --rounds 0: give 1 or more rounds"),
        (["--queue", "local:cpu"], "imf: error: --rounds N is required"),
        (["--rounds", "1", "--queue", "local:cpu", "--hours", "0"], "imf: error: --hours 0.0: give a number"),
    ]:
        proc = run_imf("loop", str(folder), *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
        assert proc.stderr.startswith(words), proc.stderr
    proc = run_imf("loop", "--resume", str(folder), "--rounds", "2", cwd=tmp_path)
    assert proc.returncode == 2 and "--resume continues a loop as it was started; drop --rounds" in proc.stderr
    assert not (folder / "loop.json").exists()
    dry = run_imf("loop", str(folder), "--dry-run", "--queue", "local:cpu", cwd=tmp_path)
    assert dry.returncode == 0 and dry.stdout.startswith("round 1 in ") and "imf trial " in dry.stdout
    assert not (folder / "loop.json").exists() and not (folder / "loop-r01").exists()


def _overfit(run: Path) -> None:
    """Rewrite the run's logs.json.txt so that it overfits: train_mse falls while val_mse turns
    up over the last three epochs; every other column stays as the run logged it."""
    log = run / "logs.json.txt"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 6
    for row, val in zip(rows, [0.90, 0.80, 0.74, 0.86, 0.98, 1.10]):
        row["train_mse"], row["val_mse"] = round(0.80 - 0.06 * row["epoch"], 4), val
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_a_loop_round_runs_and_concludes_a_more_data_warm_start(demo_cache, tmp_path):
    """A real trial of 6 tiny epochs on 4 scripted demos, one rollout at its end; a run this
    small does not overfit by itself, so its train_mse and val_mse are then rewritten to fall and
    to turn up (``_overfit``). The loop's round runs the more-data proposal for real: a warm start
    of its best.pt on 8 demonstrations, made for the trial, and concludes it."""
    folder = tmp_path / "exp"
    tiny = ["policy.n_emb=32", "policy.n_layer=1", "training.num_epochs=6", "training.rollout_every=6",
            "training.max_train_steps=4", "eval.n_test=2", "eval.max_steps=8", "eval.n_train=0",
            "data.demo_episodes=4", f"data.cache_dir={demo_cache}", "sweep.poll_interval=1"]
    proc = run_imf("trial", "smoke", *tiny, "--id", "base", "--out", str(folder / "base"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    base = folder / "base"
    assert json.loads((base / "summary.json").read_text())["data"] == {"episodes": 4, "val_episodes": 1,
                                                                       "train_episodes": 3}
    _overfit(base)
    proc = run_imf("loop", str(folder), "--rounds", "1", "--per-round", "1", "--queue", "local:cpu",
                   cwd=tmp_path, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (round_,) = json.loads((folder / "loop.json").read_text())["rounds"]
    (planned,) = round_["proposals"]
    best_pt = str((base / "checkpoints" / "best.pt").resolve())
    assert (planned["id"], planned["kind"], planned["overrides"]) == ("base-demos8", "more-data",
                                                                      ["data.demo_episodes=8"])
    assert planned["init_from"] == best_pt and round_["status"] == "concluded"
    child = folder / "loop-r01" / "base-demos8"
    summary = json.loads((child / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["init_from"] == best_pt
    assert summary["data"] == {"episodes": 8, "val_episodes": 2, "train_episodes": 6}
    assert f"warm start from {best_pt}" in (child / "stdout.log").read_text()
    assert any(line.split()[:2] == ["base-demos8", "more-data"] for line in proc.stdout.splitlines())
    (block,) = IterationLogStore(folder).hypotheses()
    assert "- base-demos8 (more-data): base overfits (val_mse +0.1667 ± 0.0638 from its lowest 3 epochs" \
        in block["hypothesis"]
    [line] = [x for x in block["conclusion"].splitlines() if x.startswith("more data: ")]
    assert line.startswith("more data: base-demos8 (8 demonstrations) scored ")
    assert "of base (4 demonstrations): " in line
    # the next round's proposals follow the verdict: double again, or stop with a note
    rows = {t.id: t for t in build_report([folder]).trials}
    gained = line.endswith("; the doubling paid")
    assert gained or line.endswith("; the doubling stopped paying")
    assert gained == (rows["base-demos8"].best_score > rows["base"].best_score
                      and "a gain beyond noise" in line)
    after = run_imf("suggest", str(folder), "--json", cwd=tmp_path)
    kinds = {r["id"]: r["kind"] for r in json.loads(after.stdout)}
    assert (kinds.get("base-demos16") == "more-data") is gained
