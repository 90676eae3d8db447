"""Synthetic run folders whose right answer is known, for ``imf suggest`` and ``imf loop``."""
from __future__ import annotations

import json
import math
from pathlib import Path

from imf.config import Config, load_config
from imf.data.sampler import downsample_mask, validation_mask

EPISODES = 50


def episodes(score: float, se: float) -> list[float]:
    """50 per-episode scores whose mean is ``score`` and standard error ``se``."""
    spread = se * math.sqrt(EPISODES - 1)
    return [score + spread, score - spread] * (EPISODES // 2)


def data_record(cfg: Config, episodes: int | None = None) -> dict[str, int]:
    """summary.json's ``data`` as a trial writes it, split by the data sets' own masks;
    ``episodes``: the size of the user's data set (data.path), else the scripted demos."""
    n = cfg.data.demo_episodes if episodes is None else episodes
    val = validation_mask(n, cfg.data.val_ratio, cfg.data.split_seed)
    train = downsample_mask(~val, cfg.data.max_train_episodes, cfg.data.split_seed)
    return {"episodes": n, "val_episodes": int(val.sum()), "train_episodes": int(train.sum())}


def make_run(folder: Path, *, n_emb: int, n_layer: int, seed: int = 42, scores: list[float],
             se: float | None = 0.01, status: str = "completed", init_from: str | None = None,
             tid: str | None = None, extra: tuple[str, ...] = (),
             losses: list[tuple[float, float]] | None = None, data_set: int | None = None) -> Path:
    """``losses``: (train_loss, val_loss) per epoch (default 0.5 and 0.6 throughout);
    ``data_set``: the episodes of the data set ``extra``'s data.path names."""
    tid = tid or f"smoke-causal-e{n_emb}-l{n_layer}-s{seed}"
    run = folder / tid
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"not a real checkpoint")
    overrides = [f"policy.n_emb={n_emb}", f"policy.n_layer={n_layer}", f"training.seed={seed}", *extra]
    cfg = load_config("smoke", overrides + ["training.num_epochs=6"])
    cfg.save(run / "config.yaml")
    losses = losses or [(0.5, 0.6)] * len(scores)
    rows = []
    for epoch, (score, (train_loss, val_loss)) in enumerate(zip(scores, losses)):
        rows.append({"epoch": epoch, "global_step": 10 * (epoch + 1), "train_loss": train_loss,
                     "val_loss": val_loss, "lr": 1e-4, "test_mean_score": score, "test_success_rate": 0.0})
        if se is not None:
            rows[-1]["test_per_seed"] = {str(100000 + i): v for i, v in enumerate(episodes(score, se))}
    (run / "logs.json.txt").write_text("".join(json.dumps(r) + "\n" for r in rows))
    best = max(range(len(scores)), key=lambda i: scores[i], default=None)
    summary = {"id": tid, "status": status, "epochs_done": len(scores), "num_epochs": 6,
               "best_score": None if best is None else scores[best], "best_epoch": best, "seed": seed, "note": "",
               "overrides": overrides, "init_from": init_from, "warm_started": bool(init_from),
               "params": {"mask": "causal", "n_emb": n_emb, "n_layer": n_layer, "n_head": 2,
                          "objective": "imf"},
               "checkpoints": {"latest": None, "best": "checkpoints/best.pt", "topk": []},
               "data": data_record(cfg, data_set)}
    (run / "summary.json").write_text(json.dumps(summary))
    return run
