"""A program shaped like a Diffusion Policy training run, without the learning: hydra-style
``key=value`` words in, logs.json.txt out (one JSON object per epoch with epoch, global_step,
train_loss, val_loss, and on rollout epochs test_mean_score), higher score is better. Its curve
is made up from the settings and the seed so imf's report and suggest have something to read.

    python dp_shaped.py --config-name=pusht_toy hydra.run.dir=OUT training.seed=1 optimizer.lr=1e-4 ...
"""
import json
import math
import random
import sys
from pathlib import Path

DEFAULTS = {"hydra.run.dir": "outputs", "training.seed": 42, "training.num_epochs": 8,
            "training.rollout_every": 2, "optimizer.lr": 1e-4, "policy.n_layer": 4}


def main():
    words = dict(w.split("=", 1) for w in sys.argv[1:] if "=" in w and not w.startswith("--"))
    unknown = sorted(set(words) - set(DEFAULTS))
    if unknown:
        sys.exit(f"dp_shaped.py: unknown key {unknown[0]} (keys: {', '.join(DEFAULTS)})")
    cfg = {k: type(v)(words[k]) if k in words else v for k, v in DEFAULTS.items()}
    out = Path(cfg["hydra.run.dir"])
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    rng = random.Random(cfg["training.seed"])
    speed = cfg["optimizer.lr"] * 1e4 * math.sqrt(cfg["policy.n_layer"] / 4)
    with open(out / "logs.json.txt", "a") as log:
        for epoch in range(cfg["training.num_epochs"]):
            loss = math.exp(-speed * (epoch + 1) / 3) + 0.01 * rng.random()
            row = {"epoch": epoch, "global_step": (epoch + 1) * 10, "train_loss": loss, "val_loss": loss * 1.1}
            if (epoch + 1) % cfg["training.rollout_every"] == 0:
                row["test_mean_score"] = min(1.0, (1 - loss) * 0.9 + 0.05 * rng.random())
            log.write(json.dumps(row) + "\n")
            log.flush()
            (out / "checkpoints" / "latest.ckpt").write_text(json.dumps({"epoch": epoch, "config": cfg}))
    print(f"done: {cfg['training.num_epochs']} epochs in {out}")


if __name__ == "__main__":
    main()
