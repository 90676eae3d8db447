"""What an iMF training step costs against a flow step, per objective option, today and before.

    python benchmarks/speed/imf_step.py [--cells 128x6,256x6] [--batch 128] [--reps 7] [--no-write]
    python benchmarks/speed/imf_step.py --render    # RUNS.md's section again from benchmarks/imf_step.json

The transformer alone (the keypoint condition: no encoder), one step = loss + backward + AdamW,
on a fixed batch. Every variant of a cell is timed in the same round, rounds interleaved
(A, B, C, A, B, C, ...), on the CPU clock of this process with one torch thread, and the median
of the rounds kept, so load from other work on a shared machine hits all of them alike.
Variants: flow; imf with the v-head tangent (the default since issue #47) at r = t shares 0.5
and 0.75; imf with the boundary tangent (the default before) at the same shares; imf with the
shared tangent (each r < t row paired with an r = t row whose forward gives its tangent: no
extra forward) at the same shares; and, for the 0.5 share of the boundary and v-head tangents, the step before the two-pass
JVP (benchmarks/speed/imf_step_before.py), side by side.

Then a breakdown by part of flow and the 0.5 variants of the three tangents: each part's CPU
time per step, median over rounds (the parts are timed by wrapping the model's passes; "rest" is
the step's time outside them: draws, loss arithmetic, the cat of the blocks).

Every figure goes to benchmarks/imf_step.json; RUNS.md's section is rendered from it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import torch
from imf_step_before import before

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # benchmarks/common/
from results_file import write_section  # noqa: E402

import imf.model.tangent as tangent  # noqa: E402
import imf_step_before  # noqa: E402
from imf.config import load_config  # noqa: E402
from imf.data import MinMaxNormalizer  # noqa: E402
from imf.policy import ImfPolicy  # noqa: E402
from imf.registry import fill_options  # noqa: E402

SECTION = "## iMF step against a flow step (benchmarks/speed/imf_step.py)"
OUT = Path(__file__).resolve().parents[1] / "imf_step.json"
BOUNDARY, V_HEAD = ["objective.options.tangent=boundary"], ["objective.options.tangent=v_head"]
SHARED = ["objective.options.tangent=shared"]
# the default step (ImfOptions' defaults: v-head, r = t share 0.5), and the default before it
DEFAULT, BOUNDARY_STEP, NEW = "imf v-head, r=t 0.5 (default)", "imf boundary, r=t 0.5", "imf shared, r=t 0.5"
VARIANTS = {  # name -> (config overrides, the step of before?)
    "flow": (["objective.name=flow"], False),
    DEFAULT: (V_HEAD + ["objective.options.equal_time_ratio=0.5"], False),
    "imf v-head, r=t 0.5, before": (V_HEAD + ["objective.options.equal_time_ratio=0.5"], True),
    "imf v-head, r=t 0.75": (V_HEAD + ["objective.options.equal_time_ratio=0.75"], False),
    BOUNDARY_STEP: (BOUNDARY + ["objective.options.equal_time_ratio=0.5"], False),
    "imf boundary, r=t 0.5, before": (BOUNDARY + ["objective.options.equal_time_ratio=0.5"], True),
    "imf boundary, r=t 0.75": (BOUNDARY + ["objective.options.equal_time_ratio=0.75"], False),
    "imf shared, r=t 0.5": (SHARED + ["objective.options.equal_time_ratio=0.5"], False),
    "imf shared, r=t 0.75": (SHARED + ["objective.options.equal_time_ratio=0.75"], False),
}
PARTS_OF = ("flow", DEFAULT, BOUNDARY_STEP, NEW)


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


def to_json(results: dict, parts: dict, batch: int, reps: int, load_start: float) -> dict:
    """Every figure of the run, as RUNS.md prints it (ms, samples/s, x flow)."""
    cells = {}
    for (n_emb, n_layer), times in results.items():
        flow = times["flow"]
        cell = {"steps": {name: {"ms": t * 1e3, "samples_per_s": batch / t, "x_flow": t / flow}
                          for name, t in times.items()}}
        if (n_emb, n_layer) in parts:
            by_variant = parts[(n_emb, n_layer)]
            flow_step = by_variant["flow"]["step"]
            cell["parts"] = {name: {part: {"ms": sec * 1e3, "x_flow": sec / flow_step} for part, sec in ps.items()}
                             for name, ps in by_variant.items()}
        cells[f"{n_emb}x{n_layer}"] = cell
    return {"command": "python benchmarks/speed/imf_step.py", "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": platform.machine(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "batch": batch, "horizon": 16, "dropout": 0, "rounds": reps, "steps_per_round": 3,
            "cores": os.cpu_count(), "load_average_start": load_start, "load_average_end": os.getloadavg()[0],
            "cells": cells}


def render(run: dict) -> str:
    lines = [SECTION, "", f"Measured {run['measured']} on {run['machine']}, torch {run['torch']}, {run['threads']} thread, "
             f"batch {run['batch']}, horizon {run['horizon']}, dropout {run['dropout']}; CPU seconds of the process, "
             f"median of {run['rounds']} interleaved rounds of {run['steps_per_round']} steps; the machine was loaded by "
             f"other jobs (load average {run['load_average_start']:.1f} at the start, {run['load_average_end']:.1f} at "
             f"the end, on {run['cores']} cores): the ratios, measured in the same rounds, are the figures to read. "
             "\"before\": the step before the two-pass JVP (benchmarks/speed/imf_step_before.py), in the same rounds. "
             "Every figure is in benchmarks/imf_step.json (`python benchmarks/speed/imf_step.py --render` writes this "
             "section again from it).", "",
             "| cell | variant | ms per step | samples/s | x flow |", "|---|---|---|---|---|"]
    for cell, c in run["cells"].items():
        for name, st in c["steps"].items():
            lines.append(f"| {cell} | {name} | {st['ms']:.1f} | {st['samples_per_s']:,.0f} | {st['x_flow']:.2f} |")
    for cell, c in run["cells"].items():
        if "parts" not in c:
            continue
        by_variant = c["parts"]
        names = list(by_variant)
        order = list(dict.fromkeys(part for name in names for part in by_variant[name] if part != "step"))
        lines += ["", f"Where a step's CPU time goes, {cell} (ms per step, median of {run['rounds']} interleaved "
                  "steps; x flow = the part's time over flow's whole step):", "",
                  "| part | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for part in order + ["step"]:
            cells = [f"{by_variant[n][part]['ms']:.1f} ({by_variant[n][part]['x_flow']:.2f})" if part in by_variant[n]
                     else "" for n in names]
            lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + notes(run)


def notes(run: dict) -> str:
    """What the run says about issue #47 item 3 (the default iMF step at most 1.2x a flow step)."""
    x = {cell: {name: st["x_flow"] for name, st in c["steps"].items()} for cell, c in run["cells"].items()}
    now = ", ".join(f"{x[c][DEFAULT]:.2f}x at {c}" for c in x if DEFAULT in x[c])
    old = ", ".join(f"{x[c][BOUNDARY_STEP]:.2f}x at {c}" for c in x if BOUNDARY_STEP in x[c])
    new = ", ".join(f"{x[c][NEW]:.2f}x at {c}" for c in x if NEW in x[c])
    met = all(xs[DEFAULT] <= 1.2 for xs in x.values() if DEFAULT in xs)
    within = [name for name in next(iter(x.values())) if name != "flow" and all(
        name in xs and xs[name] <= 1.2 for xs in x.values())]
    return f"""
What it says (issue #47 item 3: the iMF step at most 1.2x a flow step at 128x6 and 256x6).
- The default step (the v-head tangent, the default since issue #47: it learns within noise of the
  boundary tangent, RUNS.md "Ablations, keypoints15" and "Ablations, image, samples"): {now};
  {"within" if met else "not within"} 1.2x at every cell. The boundary tangent, the default
  before: {old}. The v-head's output comes from the value pass u already needs, so its tangent
  costs no forward of its own.
- Where the boundary tangent's extra cost goes (the parts tables): beyond flow's forward, backward and
  AdamW, which it matches part for part, the boundary tangent pays u(z_t, t, t) by a no-grad
  forward of the r < t half, and the JVP's tangent pass over that half; each costs about what a
  half-batch forward costs (their matmuls are a forward's). The JVP's value pass is the forward
  those rows need anyway. The tangent source sits at h = 0 and the JVP at h = t - r, so no pass
  of the same rows gives both, and the tangent pass is the derivative itself.
- The new option `objective.options.tangent=shared` removes the tangent forward: each r < t row
  is drawn as a copy of an r = t row (same x, e, t and condition), so the r = t block's own
  forward, detached, is its partner's tangent, exactly the boundary tangent's value
  (tests/test_objectives_shared.py: the loss and gradients against torch.func.jvp and a separate
  tangent forward in float64). In this run: boundary {old}; shared at the same share {new}.
- What it costs: a batch of B rows holds about B/2 distinct (x, e, t) draws instead of B, so it
  may learn less per step. It is not the default; a learning run on the selection seeds decides
  (`objective.options.tangent=shared`, with `objective.options.equal_time_ratio` 0.5 or above;
  under 0.5 the option is refused, as some r < t rows would have no partner). With an image
  encoder, the encoder still runs on all B observations, of which the loss reads n_eq.
- Within 1.2x of flow at every cell of this run: {"; ".join(within) or "none"}. Beside the
  default, each changes what is trained (the share of r = t rows, or the distinct draws), so
  each is a choice for a learning run, not made here.
- Merging the r = t forward and the JVP's value pass into one call of the whole batch (the
  shared tangent allows it) was timed once and gave no gain on this CPU (the matmuls are the
  same; per-call overhead is small at batch 128), so it was not kept.
- "before" rows: tests/test_objectives_step_before.py checks today's boundary and v-head steps
  against that step in float64 (loss and gradients).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="128x6,256x6")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--render", action="store_true", help="only write the section from imf_step.json")
    args = parser.parse_args()
    if args.render:
        write_section(SECTION, render(json.loads(OUT.read_text())))
        return
    torch.set_num_threads(1)
    load_start = os.getloadavg()[0]
    cells = [tuple(int(v) for v in c.split("x")) for c in args.cells.split(",")]
    results = measure(cells, args.batch, args.reps)
    parts = {cell: measure_parts(*cell, args.batch, args.reps) for cell in cells}
    run = to_json(results, parts, args.batch, args.reps, load_start)
    text = render(run)
    print(text)
    if not args.no_write:
        OUT.write_text(json.dumps(run, indent=1) + "\n")
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
