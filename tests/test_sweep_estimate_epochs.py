"""`imf sweep --dry-run --estimate` on the mission's grid: the image presets set no
max_train_steps, so an epoch's steps come from benchmarks/grid_cost.json's count for the same
data settings, and the estimate gives hours and the makespan; other settings get seconds only."""
from __future__ import annotations

import json

import imf.sweep.estimate as estimate
from imf.config import load_config
from imf.sweep.launch import SweepRequest, plan_sweep

STEP_S = {"g-full-e128-l6-s42": 2.0, "g-full-e384-l18-s42": 6.0}  # the two timed ends


def _plan(tmp_path, monkeypatch, steps_file, *overrides):
    monkeypatch.setattr(estimate, "_measure", lambda state, trial: STEP_S[trial.id])  # no process
    monkeypatch.setattr(estimate, "GRID_COST", steps_file)
    req = SweepRequest(config="pusht_image_imf_fullattn", mask="full", grids=["128,256,384x6,12,18"],
                       epochs=350, queues=["local:cpu"] * 3, name="g", out=tmp_path / "runs",
                       overrides=list(overrides))
    _, state, plan = plan_sweep(req)
    return estimate.estimate_lines(state, plan)


def _write_count(path, steps=201, **changed):
    settings = estimate.epoch_settings(load_config("pusht_image_imf_fullattn"))
    path.write_text(json.dumps({"steps_per_epoch": {"full": {"steps": steps, "settings": {**settings, **changed}}}}))
    return path


def test_the_mission_grid_gets_hours_per_trial_and_the_makespan(tmp_path, monkeypatch):
    lines = _plan(tmp_path, monkeypatch, _write_count(tmp_path / "grid_cost.json"))
    by_id = {line.split(":")[0].strip(): line for line in lines[1:-1]}
    assert len(by_id) == 9
    hours = 6.0 * 201 * 350 / 3600
    assert by_id["g-full-e384-l18-s42"].endswith(
        f"6.000 s a step x 201 steps (an epoch of its data: benchmarks/grid_cost.json) x 350 epochs = {hours:.2f} h")
    # 256x12 sits on the line between the two timed ends in n_layer x n_emb^2
    middle = 2.0 + (6.0 - 2.0) * (12 * 256 ** 2 - 6 * 128 ** 2) / (18 * 384 ** 2 - 6 * 128 ** 2)
    assert f"{middle:.3f} s a step x 201 steps" in by_id["g-full-e256-l12-s42"]
    assert lines[-1].startswith("  makespan on these queues: ")
    makespan = float(lines[-1].split(": ")[1].split(" h")[0])
    assert hours <= makespan < sum(float(line.split("= ")[1].rstrip(" h")) for line in by_id.values())


def test_other_data_settings_are_not_given_the_measured_count(tmp_path, monkeypatch):
    count = _write_count(tmp_path / "grid_cost.json", **{"training.batch_size": 128})
    lines = _plan(tmp_path, monkeypatch, count)
    assert all(line.endswith("(an epoch's steps come from the data set)") for line in lines[1:])
    lines = _plan(tmp_path, monkeypatch, tmp_path / "missing.json")
    assert not any("makespan" in line for line in lines)


def test_a_step_cap_needs_no_count(tmp_path, monkeypatch):
    lines = _plan(tmp_path, monkeypatch, tmp_path / "missing.json", "training.max_train_steps=50")
    assert "2.000 s a step x 50 steps x 350 epochs = 9.72 h" in "\n".join(lines)
    assert lines[-1].startswith("  makespan on these queues: ")


def test_a_step_is_timed_with_the_threads_of_the_trial_slot(tmp_path, monkeypatch):
    """Three local:cpu slots on this machine share its cores: the timing process gets the
    thread counts the slot gives its trial, not torch's default of every core."""
    import subprocess
    seen = []

    def fake_run(argv, **kwargs):  # `imf trial ... --dry-run --time-steps 2`, not run here
        seen.append({k: kwargs["env"].get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")})
        return subprocess.CompletedProcess(argv, 0, stdout="measured step: 1.5000 s (median)\n", stderr="")
    monkeypatch.setattr(estimate.subprocess, "run", fake_run)
    req = SweepRequest(config="smoke", grids=["32x1,2"], epochs=1, name="t", out=tmp_path / "runs",
                       queues=["local:cpu"] * 2)
    _, state, plan = plan_sweep(req)
    threads = str(state.queues[0].options["threads"])
    lines = estimate.estimate_lines(state, plan)
    assert seen == [{"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}] * 2
    assert lines[0].startswith(f"estimate (training only, this machine's CPU at {threads} thread(s)")
