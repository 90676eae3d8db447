"""Does the hand-written Linear/LayerNorm JVP (imf/model/jvp_ops.py) pay for itself?

Times one iMF training step of the transformer alone (loss with its JVP + backward + AdamW)
with the hand-written forward-mode rules, and again with torch's built-in rules for linear
and layer_norm (attention keeps its own math path either way). The two variants are
interleaved, so load changes hit both; the ratio is what counts.

    python benchmarks/jvp_speed.py                  # writes its section of benchmarks/RESULTS.md
    python benchmarks/jvp_speed.py --cells 128x6 --no-write
"""
from __future__ import annotations

import argparse
import contextlib
import platform
import time
from unittest import mock

import torch

from imf.model import jvp_ops
from policy_speed import fake_batch, make_policy, timed, train_step_fn
from results_file import write_section

SECTION = "## Hand-written JVP (benchmarks/jvp_speed.py)"


def builtin_rules():
    """Linear/LayerNorm take torch's own path inside a JVP (what nn.Linear would do)."""
    return mock.patch.object(jvp_ops, "forward_ad_active", lambda: False)


def measure(n_emb: int, n_layer: int, batch: int, reps: int) -> tuple[float, float]:
    policy = make_policy(n_emb, n_layer, "imf", "cpu")
    step = train_step_fn(policy, fake_batch(batch, "cpu"), transformer_only=True)
    best = {"hand": float("inf"), "builtin": float("inf")}
    for _ in range(2):
        for name, ctx in (("hand", contextlib.nullcontext), ("builtin", builtin_rules)):
            with ctx():
                best[name] = min(best[name], timed(step, reps, "cpu"))
    return best["hand"], best["builtin"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="128,256x6,12", help="n_emb list x n_layer list")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    embs, layers = (part.split(",") for part in args.cells.split("x"))
    lines = [SECTION, "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on cpu "
             f"({platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} "
             f"thread(s), a shared machine: best-of {args.reps}, interleaved). iMF training step "
             f"of the transformer alone at batch {args.batch} (reference settings).", "",
             "| n_emb x n_layer | hand-written JVP | torch's built-in rules | built-in / hand |",
             "|---|---|---|---|"]
    for e in embs:
        for n in layers:
            hand, builtin = measure(int(e), int(n), args.batch, args.reps)
            lines.append(f"| {e}x{n} | {hand * 1e3:.0f} ms | {builtin * 1e3:.0f} ms | "
                         f"{builtin / hand:.2f}x |")
            print(lines[-1], flush=True)
    lines += ["", "The hand-written rules stay while built-in / hand is clearly above 1.", ""]
    print("\n".join(lines))
    if not args.no_write:
        write_section(SECTION, lines)


if __name__ == "__main__":
    main()
