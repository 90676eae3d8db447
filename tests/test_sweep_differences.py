"""The sweep's dry run says what its trials change against the preset their config builds on."""
from __future__ import annotations

from imf.sweep.differences import difference_lines
from imf.config.presets import mask_preset
from imf.sweep.launch import SweepRequest, plan_sweep


def test_the_full_attention_sweep_shows_n_head_1_from_its_preset_and_each_trials_own(tmp_path):
    req = SweepRequest(config=mask_preset("full"), mask="full", grids=["128,256x6"], epochs=3,
                       queues=["local:cpu"], name="d", out=tmp_path)
    _, state, _ = plan_sweep(req)
    lines = difference_lines(state)
    assert lines[0].startswith("every trial differs from preset pusht_image_imf in: ")
    assert "policy.n_head 4 -> 1" in lines[0] and "policy.mask 'causal' -> 'full'" in lines[0]
    own = {line.split(" also:")[0].strip(): line for line in lines[1:]}
    assert "policy.n_emb 256 -> 128" in own["d-full-e128-l6-s42"]
    assert own["d-full-e256-l6-s42"].endswith("(nothing more)")
    assert not list(tmp_path.iterdir())  # planning writes nothing


def test_a_yaml_config_is_compared_with_its_base(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("base: smoke\ntraining:\n  lr: 0.001\n")
    req = SweepRequest(config=str(mine), grids=["training.seed=1,2"], queues=["local:cpu"], name="y",
                       out=tmp_path / "runs")
    _, state, _ = plan_sweep(req)
    lines = difference_lines(state)
    assert lines[0] == "every trial differs from preset smoke in: training.lr 0.0003 -> 0.001"


def test_the_estimate_times_the_smallest_and_largest_trial_and_places_the_rest(tmp_path, monkeypatch):
    import imf.sweep.estimate as estimate
    measured = []

    def fake_measure(state, trial):  # the real one runs `imf trial --dry-run --time-steps` (a process)
        measured.append(trial.id)
        return {"e-causal-e32-l1-s42": 0.1, "e-causal-e64-l2-s42": 0.9}[trial.id]
    monkeypatch.setattr(estimate, "_measure", fake_measure)
    req = SweepRequest(config="pusht_lowdim_cpu", grids=["32,64x1,2"], epochs=4, queues=["local:cpu"],
                       name="e", out=tmp_path)
    _, state, plan = plan_sweep(req)
    lines = estimate.estimate_lines(state, plan)
    assert sorted(measured) == ["e-causal-e32-l1-s42", "e-causal-e64-l2-s42"]
    by_id = {line.split(":")[0].strip(): line for line in lines[1:]}
    assert "0.100 s a step x 250 steps x 4 epochs = 0.03 h" in by_id["e-causal-e32-l1-s42"]
    assert "0.900 s a step x 250 steps x 4 epochs = 0.25 h" in by_id["e-causal-e64-l2-s42"]
    assert lines[-1].startswith("  makespan on these queues: ")
