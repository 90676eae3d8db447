"""What an iMF training step costs against a flow step, per objective option, today and before.

    python benchmarks/imf_step.py [--cells 128x6,256x6] [--batch 128] [--reps 7] [--no-write]

The transformer alone (the keypoint condition: no encoder), one step = loss + backward + AdamW,
on a fixed batch. Every variant of a cell is timed in the same round, rounds interleaved
(A, B, C, A, B, C, ...), on the CPU clock of this process with one torch thread, and the median
of the rounds kept, so load from other work on a shared machine hits all of them alike.
Variants: flow; imf with the boundary tangent (the presets' default) at r = t shares 0.5 and
0.75; imf with the v-head tangent at the same shares; and, for the 0.5 share of both tangents,
the step before the two-pass JVP (benchmarks/imf_step_before.py), side by side.

Then a breakdown by part of flow and the 0.5 variants, today and before: each part's CPU time
per step, median over rounds (the parts are timed by wrapping the model's passes; "rest" is the
step's time outside them: draws, loss arithmetic, the cat of the blocks).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from contextlib import ExitStack, contextmanager

import numpy as np
import torch
from imf_step_before import before
from results_file import write_section

import imf.model.tangent as tangent
import imf_step_before
from imf.config import load_config
from imf.data.normalizer import MinMaxNormalizer
from imf.policy import ImfPolicy
from imf.registry.options import fill_options

SECTION = "## iMF step against a flow step (benchmarks/imf_step.py)"
BOUNDARY, V_HEAD = ["objective.options.tangent=boundary"], ["objective.options.tangent=v_head"]
VARIANTS = {  # name -> (config overrides, the step of before?)
    "flow": (["objective.name=flow"], False),
    "imf boundary, r=t 0.5 (default)": (BOUNDARY + ["objective.options.equal_time_ratio=0.5"], False),
    "imf boundary, r=t 0.5, before": (BOUNDARY + ["objective.options.equal_time_ratio=0.5"], True),
    "imf boundary, r=t 0.75": (BOUNDARY + ["objective.options.equal_time_ratio=0.75"], False),
    "imf v-head, r=t 0.5": (V_HEAD + ["objective.options.equal_time_ratio=0.5"], False),
    "imf v-head, r=t 0.5, before": (V_HEAD + ["objective.options.equal_time_ratio=0.5"], True),
    "imf v-head, r=t 0.75": (V_HEAD + ["objective.options.equal_time_ratio=0.75"], False),
}
PARTS_OF = ("flow", "imf boundary, r=t 0.5 (default)", "imf boundary, r=t 0.5, before",
            "imf v-head, r=t 0.5", "imf v-head, r=t 0.5, before")


def make_policy(n_emb: int, n_layer: int, overrides: list[str], batch: int, old: bool = False):
    torch.manual_seed(0)
    cfg = load_config("pusht_lowdim_imf", [f"policy.n_emb={n_emb}", f"policy.n_layer={n_layer}",
                                           "policy.p_drop_attn=0", *overrides])
    fill_options(cfg)
    norm = MinMaxNormalizer()
    rng = np.random.default_rng(0)
    norm.fit("action", rng.uniform(0, 512, (100, 2)))
    norm.fit("keypoints", rng.uniform(0, 512, (100, 20)))
    h = cfg.policy.horizon
    data = {"obs": {"keypoints": torch.rand(batch, h, 20) * 512, "agent_pos": torch.rand(batch, h, 2) * 512},
            "action": torch.rand(batch, h, 2) * 512}
    policy = ImfPolicy(cfg, norm)
    if old:
        policy.objective = before(policy.objective)
    return policy, data


def training_step(policy: ImfPolicy, data: dict, clock: dict | None = None):
    """One step on a fixed batch, as a closure: loss, backward, AdamW (``clock``: part -> CPU s)."""
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-4)
    tick = _ticker(clock)

    def step() -> None:
        loss, _ = policy.compute_loss(data)
        with tick("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with tick("AdamW"):
            opt.step()
    return step


def _ticker(clock: dict | None):
    @contextmanager
    def tick(part: str):
        t0 = time.process_time()
        yield
        if clock is not None:
            clock[part] = clock.get(part, 0.0) + time.process_time() - t0
    return tick


def _timed(fn, clock: dict, part):
    """``fn`` that adds its CPU time to clock[part] (``part`` may be a function of nothing)."""
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        out = fn(*args, **kwargs)
        key = part() if callable(part) else part
        clock[key] = clock.get(key, 0.0) + time.process_time() - t0
        return out
    return wrapper


@contextmanager
def parts_timed(model, clock: dict):
    """Wrap the passes an objective makes so their CPU time lands in ``clock``."""
    grad_or_not = lambda: "forward" if torch.is_grad_enabled() else "forward, no grad (tangent source)"  # noqa: E731
    wraps = [(model, "forward", grad_or_not), (model, "_forward_with_v", "forward with v-head"),
             (tangent, "value_pass", "JVP value pass"), (tangent, "tangent_pass", "JVP tangent pass"),
             (imf_step_before, "jvp_before", "JVP, value and tangent interleaved")]
    with ExitStack() as stack:
        for owner, name, part in wraps:
            old, own = getattr(owner, name), name in vars(owner)
            setattr(owner, name, _timed(old, clock, part))
            # model.forward is the class's method: drop the wrapper rather than pin a bound copy
            stack.callback(setattr, owner, name, old) if own else stack.callback(delattr, owner, name)
        yield


def measure(cells: list[tuple[int, int]], batch: int, reps: int, n: int = 3) -> dict:
    results = {}
    for n_emb, n_layer in cells:
        steps = {name: training_step(*make_policy(n_emb, n_layer, ov, batch, old))
                 for name, (ov, old) in VARIANTS.items()}
        for step in steps.values():
            step()  # warm-up
        times: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(reps):
            for name, step in steps.items():
                t0 = time.process_time()
                for _ in range(n):
                    step()
                times[name].append((time.process_time() - t0) / n)
        results[(n_emb, n_layer)] = {name: statistics.median(v) for name, v in times.items()}
        print(n_emb, n_layer, {k: f"{v * 1e3:.1f} ms" for k, v in results[(n_emb, n_layer)].items()}, flush=True)
    return results


def measure_parts(n_emb: int, n_layer: int, batch: int, reps: int) -> dict[str, dict[str, float]]:
    """variant -> part -> median CPU seconds a step, the variants interleaved step by step."""
    runs = {}
    for name in PARTS_OF:
        policy, data = make_policy(n_emb, n_layer, VARIANTS[name][0], batch, VARIANTS[name][1])
        clock: dict[str, float] = {}
        runs[name] = (policy, training_step(policy, data, clock), clock)
    per: dict[str, dict[str, list[float]]] = {name: {} for name in runs}
    for rep in range(reps + 1):
        for name, (policy, step, clock) in runs.items():
            clock.clear()
            with parts_timed(policy.model, clock):
                t0 = time.process_time()
                step()
                total = time.process_time() - t0
            if rep == 0:
                continue  # warm-up
            clock["rest"] = total - sum(clock.values())
            clock["step"] = total
            for part, sec in clock.items():
                per[name].setdefault(part, []).append(sec)
    return {name: {part: statistics.median(v) for part, v in parts.items()} for name, parts in per.items()}


def render(results: dict, parts: dict, batch: int, reps: int) -> str:
    lines = [SECTION, "", f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"torch {torch.__version__}, {torch.get_num_threads()} thread, batch {batch}, horizon 16, dropout 0; "
             f"CPU seconds of the process, median of {reps} interleaved rounds of 3 steps; load average "
             f"{os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} cores (the ratios, measured in the same "
             "rounds, are the figures to read). \"before\": the step before the two-pass "
             "JVP (benchmarks/imf_step_before.py), in the same rounds.", "",
             "| cell | variant | ms per step | samples/s | x flow |", "|---|---|---|---|---|"]
    for (n_emb, n_layer), times in results.items():
        for name, t in times.items():
            lines.append(f"| {n_emb}x{n_layer} | {name} | {t * 1e3:.1f} | {batch / t:,.0f} | {t / times['flow']:.2f} |")
    for (n_emb, n_layer), by_variant in parts.items():
        names = list(by_variant)
        flow = by_variant["flow"]["step"]
        order = list(dict.fromkeys(part for name in names for part in by_variant[name] if part != "step"))
        lines += ["", f"Where a step's CPU time goes, {n_emb}x{n_layer} (ms per step, median of {reps} interleaved "
                  "steps; x flow = the part's time over flow's whole step):", "",
                  "| part | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for part in order + ["step"]:
            cells = [f"{by_variant[n][part] * 1e3:.1f} ({by_variant[n][part] / flow:.2f})" if part in by_variant[n]
                     else "" for n in names]
            lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="128x6,256x6")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cells = [tuple(int(v) for v in c.split("x")) for c in args.cells.split(",")]
    results = measure(cells, args.batch, args.reps)
    parts = {cell: measure_parts(*cell, args.batch, args.reps) for cell in cells}
    text = render(results, parts, args.batch, args.reps)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
