"""A small trainer that is not imf's: random-feature regression of a noisy sine, fitted by
gradient descent in numpy (seconds on a CPU). Lower validation MSE is better.

    python train.py --out DIR [--seed N] [--params params.json] [--init_from DIR/best.pt]

--params is a JSON patch deep-merged into DEFAULTS. Writes DIR/log.jsonl (one line per
evaluation), DIR/best.pt (the best weights, numpy's npz format) and DIR/summary.json.
"""
import argparse
import json
from pathlib import Path

import numpy as np

DEFAULTS = {"model": {"features": 16, "scale": 1.0}, "optim": {"lr": 0.05, "steps": 300, "eval_every": 50}}


def merge(base, patch):
    out = dict(base)
    for key, value in patch.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def data(rng, n):
    x = rng.uniform(-3, 3, size=(n, 1))
    return x, np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--params")
    parser.add_argument("--init_from")
    a = parser.parse_args()
    params = merge(DEFAULTS, json.loads(Path(a.params).read_text()) if a.params else {})
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    m, o = params["model"], params["optim"]
    freq = np.random.default_rng(1234).normal(scale=m["scale"], size=(1, m["features"]))  # fixed features
    rng = np.random.default_rng(a.seed)
    (x, y), (xv, yv) = data(rng, 256), data(np.random.default_rng(99), 128)
    feats = lambda inputs: np.concatenate([np.sin(inputs @ freq), np.cos(inputs @ freq)], axis=1)
    w = rng.normal(scale=0.1, size=2 * m["features"])
    if a.init_from:
        w = np.load(a.init_from)["w"]
    best = float("inf")
    with open(out / "log.jsonl", "a") as log:
        for step in range(1, o["steps"] + 1):
            f = feats(x)
            w -= o["lr"] * 2 * f.T @ (f @ w - y) / len(y)
            if step % o["eval_every"] == 0 or step == o["steps"]:
                val = float(np.mean((feats(xv) @ w - yv) ** 2))
                log.write(json.dumps({"step": step, "val_mse": val}) + "\n")
                if val < best:
                    best = val
                    with open(out / "best.pt", "wb") as f_out:
                        np.savez(f_out, w=w)
    (out / "summary.json").write_text(json.dumps({"val_mse": best, "params": params, "seed": a.seed}))
    print(f"val_mse={best:.6f}")


if __name__ == "__main__":
    main()
