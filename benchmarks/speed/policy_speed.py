"""Policy speed over the sweep grid (n_emb 128/256/384 x n_layer 6/12/18).

For every cell: parameter counts; the training-step time (loss + backward + AdamW step) of
`imf` vs `flow` on the same backbone and batch, for the whole policy (ResNet-18 encoder
included) and for the transformer alone; and the batch-1 action-chunk latency of a 1-step
`imf` policy vs the 100-step `ddpm` one, encoder included. Ratios are measured in one run,
with the two objectives interleaved so that load changes hit both.

    python benchmarks/speed/policy_speed.py                 # the grid, writes benchmarks/RESULTS.md
    python benchmarks/speed/policy_speed.py --cells 256x6   # one cell
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

from imf.config import load_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402
from imf.data import MinMaxNormalizer  # noqa: E402
from imf.policy import ImfPolicy  # noqa: E402

SECTION = "## Policy (benchmarks/speed/policy_speed.py)"


def normalizer() -> MinMaxNormalizer:
    norm = MinMaxNormalizer()
    rng = np.random.default_rng(0)
    norm.fit("action", rng.uniform(0, 512, (100, 2)))
    norm.fit("agent_pos", rng.uniform(0, 512, (100, 2)))
    norm.set_identity_range("image", 0.0, 1.0)
    return norm


def make_policy(n_emb: int, n_layer: int, objective: str, device: str) -> ImfPolicy:
    torch.manual_seed(0)
    cfg = load_config("pusht_image_imf", [f"policy.n_emb={n_emb}", f"policy.n_layer={n_layer}",
                                          f"objective.name={objective}"])
    return ImfPolicy(cfg, normalizer()).to(device)


def fake_batch(b: int, device: str) -> dict:
    return {"obs": {"image": torch.rand(b, 2, 3, 96, 96, device=device),
                    "agent_pos": 512 * torch.rand(b, 2, 2, device=device)},
            "action": 512 * torch.rand(b, 10, 2, device=device)}


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, reps: int, device: str) -> float:
    """Best of ``reps`` timed calls after one warm-up (best-of resists background load)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def train_step_fn(policy: ImfPolicy, batch: dict, transformer_only: bool):
    opt = torch.optim.AdamW(policy.optimizer_groups(policy.cfg.training), lr=1e-4)
    policy.train()
    with torch.no_grad():
        policy.encoder.eval()
        cond = policy.encode_obs(batch["obs"], slice(0, 2))  # fixed features: transformer only
        actions = policy.normalizer.normalize("action", batch["action"])
        policy.encoder.train()

    def step():
        if transformer_only:
            loss, _ = policy.objective.loss(policy.model, actions, cond)
        else:
            loss, _ = policy.compute_loss(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def train_ratio(n_emb: int, n_layer: int, batch_size: int, reps: int, device: str) -> dict:
    policies = {name: make_policy(n_emb, n_layer, name, device) for name in ("flow", "imf")}
    batch = fake_batch(batch_size, device)
    out = {}
    for scope, only in (("policy", False), ("transformer", True)):
        best = {name: float("inf") for name in policies}
        fns = {name: train_step_fn(p, batch, only) for name, p in policies.items()}
        for _ in range(2):  # interleave: flow, imf, flow, imf
            for name, fn in fns.items():
                best[name] = min(best[name], timed(fn, reps, device))
        out[scope] = (best["flow"], best["imf"])
    return out


def latency(n_emb: int, n_layer: int, reps_ddpm: int, device: str) -> dict[str, float]:
    """Batch-1 chunk latency, encoder included ('imf', 'ddpm') and transformer only ('*_t')."""
    obs = {k: v[:1] for k, v in fake_batch(1, device)["obs"].items()}
    result = {}
    for name, reps in (("imf", 10), ("ddpm", reps_ddpm)):
        policy = make_policy(n_emb, n_layer, name, device).eval()
        with torch.no_grad():
            cond = policy.encode_obs(obs, slice(-2, None))
            result[name] = timed(lambda: policy.predict_action(obs), reps, device)
            result[name + "_t"] = timed(lambda: policy.objective.sample(policy.model, cond), reps, device)
    return result


def param_counts(n_emb: int, n_layer: int) -> tuple[int, int]:
    policy = make_policy(n_emb, n_layer, "imf", "cpu")
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    return count(policy.model), count(policy.encoder)


def run_cell(n_emb: int, n_layer: int, args) -> dict:
    big = n_emb * n_emb * n_layer > 256 * 256 * 6
    reps = max(1, args.reps - 1) if big else args.reps
    row = {"cell": f"{n_emb}x{n_layer}"}
    row["params_transformer"], row["params_encoder"] = param_counts(n_emb, n_layer)
    row["train"] = train_ratio(n_emb, n_layer, args.batch, reps, args.device)
    row["latency"] = latency(n_emb, n_layer, 1 if big else 2, args.device)
    row["reps"] = reps
    return row


def format_section(rows: list[dict], args) -> str:
    lines = [SECTION, "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {args.device} "
             f"({platform.processor() or platform.machine()}, torch {torch.__version__}, "
             f"{torch.get_num_threads()} thread(s), a shared machine: best-of timings). "
             f"Training step = loss + backward + AdamW step at batch {args.batch}, reference "
             "settings (horizon 10, 2 obs steps, dropout 0.3, causal mask); `policy` includes "
             "the ResNet-18 encoder on 2 x 84x84 crops per sample, `transformer` feeds fixed "
             "features. Latency = one `predict_action` at batch 1 in eval mode, encoder included. "
             "Cells larger than 256x6 are timed with fewer repetitions.", "",
             "| n_emb x n_layer | transformer params | encoder params | flow step (policy) | "
             "imf step (policy) | imf/flow (policy) | imf/flow (transformer) | imf 1-step chunk | "
             "ddpm 100-step chunk | ddpm/imf | ddpm/imf (transformer) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        (pf, pi), (tf, ti) = r["train"]["policy"], r["train"]["transformer"]
        lat = r["latency"]
        li, ld = lat["imf"], lat["ddpm"]
        lines.append(
            f"| {r['cell']} | {r['params_transformer'] / 1e6:.2f} M | {r['params_encoder'] / 1e6:.2f} M | "
            f"{pf * 1e3:.0f} ms | {pi * 1e3:.0f} ms | {pi / pf:.2f}x | {ti / tf:.2f}x | "
            f"{li * 1e3:.1f} ms | {ld * 1e3:.0f} ms | {ld / li:.0f}x | {lat['ddpm_t'] / lat['imf_t']:.0f}x |")
    lines += ["", "Targets: imf/flow (policy) <= 1.3x; ddpm/imf >= 50x.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="128,256,384x6,12,18", help="n_emb list x n_layer list")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    embs, layers = (part.split(",") for part in args.cells.split("x"))
    rows = []
    for e in embs:
        for n in layers:
            rows.append(run_cell(int(e), int(n), args))
            print(format_section(rows[-1:], args).splitlines()[-3], flush=True)
    text = format_section(rows, args)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
