"""Synthetic run folders whose right answer is known, for ``imf suggest`` and ``imf loop``."""
from __future__ import annotations

import json
import math
from pathlib import Path

from imf.config import load_config

EPISODES = 50


def episodes(score: float, se: float) -> list[float]:
    """50 per-episode scores whose mean is ``score`` and standard error ``se``."""
    spread = se * math.sqrt(EPISODES - 1)
    return [score + spread, score - spread] * (EPISODES // 2)


def make_run(folder: Path, *, n_emb: int, n_layer: int, seed: int = 42, scores: list[float],
             se: float | None = 0.01, status: str = "completed", init_from: str | None = None,
             tid: str | None = None, extra: tuple[str, ...] = ()) -> Path:
    tid = tid or f"smoke-causal-e{n_emb}-l{n_layer}-s{seed}"
    run = folder / tid
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"not a real checkpoint")
    overrides = [f"policy.n_emb={n_emb}", f"policy.n_layer={n_layer}", f"training.seed={seed}", *extra]
    load_config("smoke", overrides + ["training.num_epochs=6"]).save(run / "config.yaml")
    rows = []
    for epoch, score in enumerate(scores):
        rows.append({"epoch": epoch, "global_step": 10 * (epoch + 1), "train_loss": 0.5,
                     "val_loss": 0.6, "lr": 1e-4, "test_mean_score": score, "test_success_rate": 0.0})
        if se is not None:
            rows[-1]["test_per_seed"] = {str(100000 + i): v for i, v in enumerate(episodes(score, se))}
    (run / "logs.json.txt").write_text("".join(json.dumps(r) + "\n" for r in rows))
    best = max(range(len(scores)), key=lambda i: scores[i], default=None)
    summary = {"id": tid, "status": status, "epochs_done": len(scores), "num_epochs": 6,
               "best_score": None if best is None else scores[best], "best_epoch": best, "seed": seed, "note": "",
               "overrides": overrides, "init_from": init_from, "warm_started": bool(init_from),
               "params": {"mask": "causal", "n_emb": n_emb, "n_layer": n_layer, "n_head": 2,
                          "objective": "imf"},
               "checkpoints": {"latest": None, "best": "checkpoints/best.pt", "topk": []}}
    (run / "summary.json").write_text(json.dumps(summary))
    return run
