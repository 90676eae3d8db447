"""The mission's pipeline on a tiny grid, end to end with real processes: `imf sweep --mask full`
and `--mask causal` of real `imf trial smoke` runs (2 cells x 2 seeds, each re-scored on
selection seeds), then `imf report A B`: its header names every setting the two sweeps differ
in, and each cell's difference and verdict rest on both seeds of each side (slow)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from imf_process import run_imf

from imf.stats import clear_difference

pytestmark = pytest.mark.slow  # two sweeps of four real trials each

# The tiny overrides of tests/test_sweep_real.py and tests/test_trial_identity.py.
TINY = ["training.max_train_steps=2", "training.batch_size=8", "eval.n_test=2", "eval.n_train=0",
        "eval.max_steps=8", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false"]
SEEDS = (42, 43)


def sweep(tmp_path: Path, cache: str, mask: str, *extra: str) -> Path:
    proc = run_imf("sweep", "smoke", "--mask", mask, "--grid", "32x1,2", "--seeds", ",".join(map(str, SEEDS)),
                   *TINY, f"data.cache_dir={cache}", *extra, "--epochs", "1", "--queue", "local:cpu",
                   "--queue", "local:cpu", "--final-eval", "2", "--name", mask, "--out", str(tmp_path / "runs"),
                   "--poll", "0.5", "--stall-timeout", "600", cwd=tmp_path, timeout=1200,
                   env={"IMF_CACHE": cache})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return tmp_path / "runs" / mask


def cell_of(sweep_dir: Path, n_layer: int) -> tuple[float, float]:
    """Mean over both seeds of the trials' selection scores (final_eval.json) and the cell's SE
    by the report's rule: the spread over seeds, never less than the episodes' own noise."""
    evals = [json.loads((sweep_dir / f"{sweep_dir.name}-{sweep_dir.name}-e32-l{n_layer}-s{s}" /
                         "final_eval.json").read_text()) for s in SEEDS]
    scores = [e["mean"] for e in evals]
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((x - mean) ** 2 for x in scores) / (len(scores) - 1))
    episodes = math.sqrt(sum(e["se"] ** 2 for e in evals)) / len(evals)
    return mean, max(sd / math.sqrt(len(scores)), episodes)


def test_two_tiny_sweeps_compared_name_what_differs_and_judge_each_cell_on_both_seeds(tmp_path, demo_cache):
    # n_head 1 on the full side, as the full-attention preset would slip it in
    full = sweep(tmp_path, demo_cache, "full", "policy.n_head=1")
    causal = sweep(tmp_path, demo_cache, "causal")
    proc = run_imf("report", str(full), str(causal), "--out", str(tmp_path / "cmp"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    header = proc.stdout.splitlines()[:3]
    assert header[0] == f"A = {full} (full), B = {causal} (causal)"
    assert header[1] == ("differs (A | B, beyond the grid axes and the seed): policy.mask full | causal; "
                         "policy.n_head 1 | 2")
    # The cells compare the selection scores where the report ranks by them (every trial has a
    # final_eval.json); a report that ranks by max shows the selection difference beside it.
    on_selection = "per cell: mean over seeds of selection score" in header[2]
    comparison = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert comparison["differs"] == {"policy.mask": ["full", "causal"], "policy.n_head": [1, 2]}
    assert any("differ in 2 settings (policy.mask, policy.n_head)" in n for n in comparison["notes"])
    assert [(c["n_emb"], c["n_layer"]) for c in comparison["cells"]] == [(32, 1), (32, 2)]
    for c in comparison["cells"]:
        assert c["n_a"] == c["n_b"] == 2 and c["seeds_a"] == c["seeds_b"] == list(SEEDS)
        (a, se_a), (b, se_b) = cell_of(full, c["n_layer"]), cell_of(causal, c["n_layer"])
        se = math.sqrt(se_a ** 2 + se_b ** 2)
        assert c["selection_diff"] == pytest.approx(b - a) and c["selection_se"] == pytest.approx(se)
        if on_selection:
            assert c["a"] == pytest.approx(a) and c["b"] == pytest.approx(b)
            assert c["diff"] == pytest.approx(b - a) and c["se"] == pytest.approx(se)  # causal minus full
        assert c["z"] == pytest.approx(c["diff"] / c["se"])
        beyond = clear_difference(c["diff"], c["se"], 0.0, 0.0)
        ahead = "causal better" if c["diff"] > 0 else "full better"
        assert c["verdict"] == (ahead if beyond else "a tie")
        row = next(line for line in proc.stdout.splitlines() if line.startswith(f"32     {c['n_layer']} "))
        assert c["verdict"] in row and f"{c['z']:+.2f}" in row
