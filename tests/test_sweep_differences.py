"""The sweep's dry run says what its trials change against the preset their config builds on."""
from __future__ import annotations

from imf.sweep.differences import difference_lines
from imf.sweep.launch import SweepRequest, default_config, plan_sweep


def test_the_full_attention_sweep_shows_n_head_1_from_its_preset_and_each_trials_own(tmp_path):
    req = SweepRequest(config=default_config("full"), mask="full", grids=["128,256x6"], epochs=3,
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
