"""Scores a checkpoint of train.py on a validation set of its own (seed 7, 512 points): lower
MSE is better.

    python eval.py --ckpt DIR/best.pt --params params.json --out EVAL_DIR

Writes EVAL_DIR/eval.json ({"val_mse": ..., "n": 512}) and prints val_mse=....
"""
import argparse
import json
from pathlib import Path

import numpy as np

from train import DEFAULTS, data, merge


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--params")
    parser.add_argument("--out", required=True)
    a = parser.parse_args()
    params = merge(DEFAULTS, json.loads(Path(a.params).read_text()) if a.params else {})
    m = params["model"]
    freq = np.random.default_rng(1234).normal(scale=m["scale"], size=(1, m["features"]))  # as train.py's
    w = np.load(a.ckpt)["w"]
    x, y = data(np.random.default_rng(7), 512)
    f = np.concatenate([np.sin(x @ freq), np.cos(x @ freq)], axis=1)
    mse = float(np.mean((f @ w - y) ** 2))
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "eval.json").write_text(json.dumps({"val_mse": mse, "n": len(y)}))
    print(f"val_mse={mse:.6f}")


if __name__ == "__main__":
    main()
