"""`imf trial` on the real stack: scripted demos, the real policy, the simulator scorer."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from imf.config import load_config
from imf.errors import CheckpointError
from imf.train.checkpoint import load_checkpoint
from imf.train.trial import TrialOptions, run_trial
from imf_process import run_imf, run_in_process

pytestmark = pytest.mark.slow  # starts processes or trains: not in the unit tier

torch.set_num_threads(1)

# Small enough for a couple of seconds per epoch on one core.
TINY = ["training.max_train_steps=4", "training.batch_size=16", "eval.n_test=2", "eval.n_train=0",
        "eval.max_steps=24", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false"]


def tiny(demo_cache: str, *extra: str, preset: str = "smoke"):
    return load_config(preset, TINY + [f"data.cache_dir={demo_cache}", *extra])


def run(cfg, run_dir: Path, **kw):
    opts = TrialOptions(trial_id=kw.pop("trial_id", run_dir.name), run_dir=run_dir, **kw)
    return run_trial(cfg, opts)


def test_trial_writes_every_file_and_records(demo_cache, tmp_path):
    run_dir = tmp_path / "runs" / "t1"
    summary = run(tiny(demo_cache, "training.num_epochs=2"), run_dir, note="first")
    assert summary["status"] == "completed" and summary["epochs_done"] == 2
    # 4 demos, val_ratio 0.2: one validation episode, no cap (what imf suggest's more-data rule reads)
    assert summary["data"] == {"episodes": 4, "val_episodes": 1, "train_episodes": 3}
    for name in ("config.yaml", "logs.json.txt", "stdout.log", "summary.json",
                 "checkpoints/latest.pt", "checkpoints/best.pt"):
        assert (run_dir / name).exists(), name
    rows = [json.loads(line) for line in (run_dir / "logs.json.txt").read_text().splitlines()]
    assert [r["epoch"] for r in rows] == [0, 1]
    assert {"epoch", "global_step", "train_loss", "val_loss", "lr"} <= rows[0].keys()
    assert {"test_mean_score", "test_success_rate", "test_per_seed"} <= rows[1].keys()
    assert len(rows[1]["test_per_seed"]) == 2
    topk = list((run_dir / "checkpoints").glob("epoch=*-test_mean_score=*.pt"))
    assert len(topk) == 2
    ckpt = load_checkpoint(run_dir / "checkpoints" / "latest.pt")
    assert {"config", "normalizer", "policy", "ema", "optimizer", "epoch", "scores", "code_version"} <= ckpt.keys()
    board = json.loads((tmp_path / "runs" / "scoreboard.json").read_text())
    assert board["best"]["trial"] == "t1"
    assert "t1" in (tmp_path / "runs" / "ITERATION_LOG.md").read_text()


def test_patience_stops_early(demo_cache, tmp_path):
    # lr 0 keeps the weights fixed, so every rollout scores the same: no new best after the first.
    cfg = tiny(demo_cache, "training.num_epochs=6", "training.lr=0", "training.patience=2",
               "logging.stores=none")
    summary = run(cfg, tmp_path / "p")
    assert summary["status"] == "stopped_early"
    assert summary["epochs_done"] == 3


def test_huge_learning_rate_is_detected_as_diverged(demo_cache, tmp_path):
    cfg = tiny(demo_cache, "training.num_epochs=4", "training.lr=1e6", "training.lr_warmup_steps=1",
               "training.grad_clip=1e9", "training.divergence_warmup_steps=2", "training.max_train_steps=8",
               "training.divergence_factor=5", "logging.stores=none")
    summary = run(cfg, tmp_path / "d")
    assert summary["status"] == "diverged", summary
    assert "loss" in summary["reason"]
    last = json.loads((tmp_path / "d" / "logs.json.txt").read_text().splitlines()[-1])
    assert last["diverged"] is True


def test_warm_start_counts_and_full_from_causal_loads_everything(demo_cache, tmp_path, capsys):
    run(tiny(demo_cache, "training.num_epochs=1", "logging.stores=none"), tmp_path / "causal")
    ckpt = tmp_path / "causal" / "checkpoints" / "latest.pt"
    full = tiny(demo_cache, "training.num_epochs=1", "policy.mask=full", "policy.n_head=1",
                "logging.stores=none")
    summary = run(full, tmp_path / "full", init_from=ckpt)
    assert summary["warm_started"] is True
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("warm start from"))
    n_tensors = sum(isinstance(v, torch.Tensor) for v in load_checkpoint(ckpt)["policy"].values())
    assert f"{n_tensors} tensors loaded, 0 missing, 0 unexpected, 0 shape-mismatched" in line


def test_a_bad_or_incompatible_warm_start_fails_before_the_run_folder_is_made(demo_cache, tmp_path):
    run(tiny(demo_cache, "training.num_epochs=1", "logging.stores=none"), tmp_path / "a")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not readable"):
        run(tiny(demo_cache, "logging.stores=none"), tmp_path / "b", init_from=bad)
    cfg = tiny(demo_cache, "policy.n_obs_steps=1", "logging.stores=none")
    with pytest.raises(CheckpointError, match="policy.n_obs_steps=2, this run has 1"):
        run(cfg, tmp_path / "c", init_from=tmp_path / "a" / "checkpoints" / "latest.pt")
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_corrupt_checkpoint_is_a_clear_error_and_left_alone(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match=r"checkpoint .*bad.pt is not readable"):
        load_checkpoint(bad)
    assert bad.read_bytes() == b"not a checkpoint at all"
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="is a folder, not a checkpoint file"):
        load_checkpoint(tmp_path)


def test_rerun_moves_previous_attempt_aside(demo_cache, tmp_path):
    cfg = tiny(demo_cache, "training.num_epochs=1", "logging.stores=none")
    run(cfg, tmp_path / "r")
    first = (tmp_path / "r" / "logs.json.txt").read_text()
    run(cfg, tmp_path / "r")
    assert (tmp_path / "r" / "attempts" / "1" / "logs.json.txt").read_text() == first  # as a sweep archives


def test_swanlab_offline_logs_scalars(demo_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("SWANLAB_MODE", "offline")
    cfg = tiny(demo_cache, "training.num_epochs=1", "logging.swanlab=true", "logging.stores=none")
    run(cfg, tmp_path / "s")
    files = [p for p in (tmp_path / "s" / "swanlog").rglob("*.swanlab")]
    assert files, "swanlab wrote no run file"
    assert b"train_loss" in files[0].read_bytes()


def test_swanlab_failure_never_kills_training(demo_cache, tmp_path, monkeypatch, capsys):
    import swanlab

    def broken_init(**kwargs):
        raise RuntimeError("tracker service exploded")
    monkeypatch.setattr(swanlab, "init", broken_init)
    cfg = tiny(demo_cache, "training.num_epochs=1", "logging.swanlab=true", "logging.stores=none")
    summary = run(cfg, tmp_path / "sf")
    assert summary["status"] == "completed"
    assert "swanlab: start failed (RuntimeError: tracker service exploded)" in capsys.readouterr().out


def test_cli_bad_inputs_are_one_line(tmp_path, monkeypatch, capsys):
    # Each refusal runs in this process (the same main() as `imf`); the first two also run as real
    # processes, so the one-line contract is checked where a user meets it, at a tenth of the CPU.
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    for number, (args, needle) in enumerate([
        (["trial", "smoke", "policy.n_emd=3"], "unknown config key 'policy.n_emd'"),
        (["trial", "nosuchpreset"], "unknown preset 'nosuchpreset'"),
        (["trial", "smoke", "--overrides", "{oops"], "--overrides is not valid JSON"),
        (["trial", "smoke", "--init-from", "nope.pt"], "--init-from: checkpoint nope.pt does not exist"),
        (["trial", "--resume"], "--resume needs --out"),
        (["eval", str(tmp_path / "x.pt")], "does not exist"),
        (["eval", "--best", str(tmp_path)], "no scoreboard.json"),
        (["eval", "x.pt", "--n-test", "0"], "--n-test 0: the number of test episodes must be at least 1"),
        (["eval", "x.pt", "--start-seed", "-5"], "--start-seed -5: test seeds must lie in 0..4294967295"),
        (["eval", "x.pt", "--start-seed", "4294967295", "--n-test", "2"], "--start-seed 4294967295"),
        (["eval", "x.pt", "--workers", "-1"], "--workers -1: give 0 (automatic) or more"),
        (["eval", "x.pt", "--action-steps", "0"], "--action-steps 0: execute at least 1 action"),
        (["eval", "x.pt", "--device", "banana"], "--device: got 'banana', allowed: auto, cpu, cuda"),
        (["trial", "smoke", "--device", "banana", "--out", str(tmp_path / "dev")], "got 'banana'"),
        (["trial", "smoke", "--out", str(tmp_path / "a-file" / "run")], "Not a directory"),
    ]):
        if number < 2:
            out = run_imf(*args, cwd=tmp_path)
            code, err = out.returncode, out.stderr
        else:
            code, _, err = run_in_process(monkeypatch, capsys, *args)
        assert code == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("imf: error:") and needle in lines[0], (args, err)
    assert not (tmp_path / "dev").exists()  # a bad device is refused before the run folder is made


@pytest.mark.slow
@pytest.mark.parametrize("early", [[], ["training.early_batch_size=8", "training.early_batch_samples=64"]],
                         ids=["one-batch", "early-batch"])
def test_resume_after_kill_reproduces_the_uninterrupted_logs(demo_cache, tmp_path, early):
    # latest.pt is written at the rollout epochs 1 and 3 (checkpoint_every 5): a kill after the
    # third log line makes the resume drop and redo the epochs after the checkpoint (with an
    # early batch of 8 for 64 samples, the first epoch it redoes is the first at the batch of 16).
    args = ["trial", "smoke", *TINY, f"data.cache_dir={demo_cache}", "training.num_epochs=5",
            "training.rollout_every=2", "training.checkpoint_every=5", *early, "--store", "none"]
    straight = run_imf(*args, "--out", str(tmp_path / "straight"), cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "imf", *args, "--out", str(tmp_path / "crash")],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / "crash" / "logs.json.txt"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed = run_imf("trial", "--resume", "--out", str(tmp_path / "crash"), "--store", "none", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "resume: continuing at epoch" in resumed.stdout

    def strip(path):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return [{k: v for k, v in r.items() if k not in ("elapsed_s", "train_s")} for r in rows]
    assert strip(tmp_path / "crash" / "logs.json.txt") == strip(tmp_path / "straight" / "logs.json.txt")
    # The top-k file of latest.pt's own epoch was made after latest.pt: the resume still lists it.
    topk = {name: json.loads((tmp_path / name / "summary.json").read_text())["checkpoints"]["topk"]
            for name in ("straight", "crash")}
    assert topk["crash"] == topk["straight"] and len(topk["straight"]) == 3
    assert all((tmp_path / "crash" / path).is_file() for path in topk["crash"])


@pytest.mark.slow
def test_cli_smoke_trial_then_eval_reproduces_the_logged_score(demo_cache, tmp_path):
    out = run_imf("trial", "smoke", f"data.cache_dir={demo_cache}", "data.demo_episodes=4",
               "logging.swanlab=false", "--id", "smoke1", "--out", str(tmp_path / "runs" / "smoke1"),
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "runs" / "smoke1" / "summary.json").read_text())
    best_epoch = summary["best_epoch"]
    logged = [json.loads(line) for line in (tmp_path / "runs" / "smoke1" / "logs.json.txt").read_text().splitlines()]
    logged_score = next(r["test_mean_score"] for r in logged if r["epoch"] == best_epoch)
    ev = run_imf("eval", "--best", str(tmp_path / "runs"), "--json", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    result = json.loads(ev.stdout)
    assert result["test_mean_score"] == pytest.approx(logged_score, abs=1e-9)
    assert len(result["per_seed"]) == 4


@pytest.mark.parametrize("content, reason", [
    (b"plain text, not a checkpoint\n", "not a torch checkpoint file"),
    (b"hi\n", "not a torch checkpoint file"),  # torch.load says only "KeyError: 105"
    (b"", "not a torch checkpoint file"),
    (None, "not a checkpoint written by imf"),
])
def test_unreadable_checkpoint_reasons(tmp_path, content, reason):
    path = tmp_path / "x.pt"
    if content is None:
        torch.save({"format": "imf-checkpoint-1", "obj": object}, path)  # a pickled class
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    with pytest.raises(CheckpointError, match=reason):
        load_checkpoint(path)
    assert path.read_bytes() == before


def test_unknown_store_fails_before_training(tmp_path):
    out = run_imf("trial", "smoke", "--store", "sqlite", "--out", str(tmp_path / "x"), cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == ("imf: error: unknown store 'sqlite' in imf.stores; "
                                  "installed: iteration-log, scoreboard")
    assert not (tmp_path / "x").exists()
