"""Real run folders on disk for the report tests: imf runs, sweeps and Diffusion Policy runs."""
from __future__ import annotations

import json
from pathlib import Path

import yaml


def write_log(run: Path, scores: list, *, key: str = "test_mean_score", success: bool = True,
              tail: str = "", spread: float | None = None, steps_per_epoch: int = 10,
              epoch_s: float | None = None) -> None:
    """One line per epoch; ``None`` in ``scores`` is an epoch without a rollout. With ``spread``
    d, a rollout of score s has two episodes s - d and s + d: its standard error is exactly d.
    ``epoch_s``: training seconds per epoch (logged as train_s)."""
    lines = []
    for epoch, score in enumerate(scores):
        row = {"epoch": epoch, "global_step": steps_per_epoch * (epoch + 1), "train_loss": 1 / (epoch + 1),
               "val_loss": 2 / (epoch + 1)}
        if epoch_s is not None:
            row["train_s"] = epoch_s * (epoch + 1)
        if score is not None:
            row[key] = score
            if success:
                row["test_success_rate"] = score / 2
            if spread is not None:
                row["test_per_seed"] = {"100000": score - spread, "100001": score + spread}
        lines.append(json.dumps(row))
    (run / "logs.json.txt").write_text("\n".join(lines) + "\n" + tail)


def make_run(root: Path, trial_id: str, scores: list, *, n_emb: int | None = None,
             n_layer: int | None = None, status: str | None = "completed",
             config: dict | None = None, **log_kwargs) -> Path:
    """An imf run folder: logs.json.txt, summary.json (unless status is None), config.yaml."""
    run = root / trial_id
    run.mkdir(parents=True)
    write_log(run, scores, **log_kwargs)
    if status is not None:
        params = {"mask": "full", "n_emb": n_emb, "n_layer": n_layer} if n_emb else {}
        best = max((s for s in scores if s is not None), default=None)
        summary = {"id": trial_id, "status": status, "epochs_done": len(scores),
                   "best_score": best, "params": params, "note": f"note {trial_id}"}
        (run / "summary.json").write_text(json.dumps(summary))
    if config is not None:
        (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def make_dp_run(folder: Path, scores: list, policy: dict) -> Path:
    """A Diffusion Policy output folder: test/mean_score logs and .hydra/config.yaml."""
    (folder / ".hydra").mkdir(parents=True)
    write_log(folder, scores, key="test/mean_score", success=False)
    config = {"name": "train_diffusion_transformer_hybrid", "policy": policy,
              "training": {"num_epochs": 100}}
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def make_grid_sweep(root: Path) -> Path:
    """Six trials on a 2x2 grid; the expected numbers are worked out in test_report_build."""
    sweep = root / "sw"
    d = {"spread": 0.05}  # every rollout's SE is 0.05
    make_run(sweep, "sw-full-e128-l6-s0", [0.50, 0.60, 0.55], n_emb=128, n_layer=6, **d)
    make_run(sweep, "sw-full-e128-l6-s1", [0.40], n_emb=128, n_layer=6, status="stopped_early", **d)
    make_run(sweep, "sw-full-e256-l6-s0", [None, 0.70, None, 0.80], n_emb=256, n_layer=6, **d)
    make_run(sweep, "sw-full-e128-l12-s0", [0.30, 0.50], n_emb=128, n_layer=12, **d)
    make_run(sweep, "sw-full-e256-l12-s0", [0.90, float("nan")], n_emb=256, n_layer=12,
             status="diverged", **d)
    make_run(sweep, "sw-full-e256-l12-s1", [None], n_emb=256, n_layer=12, status="running")
    return sweep
