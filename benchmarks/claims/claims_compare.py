"""The equal-compute passages of benchmarks/claims/claims.py: imf at one sampling step against ddpm at 100
and flow at one, per training seed, and what each comparison was equal in."""
from __future__ import annotations

from claims_base import ClaimError, Data, gap


def comparison(data: Data, name: str, other: str, label: str) -> list[str]:
    """imf against ``other`` per training seed, read per measure: a tie only where every seed
    ties, and no claim across seeds where one of them has no run of ``other``."""
    if not data.seeds(name, other):
        raise ClaimError(f"{data.folder / name}.json has no {other} run")
    parts, missing = [], []
    found: dict[str, list[tuple[int, bool, str]]] = {"coverage": [], "success": []}  # (seed, beyond, ahead)
    for seed in data.seeds(name):
        if seed not in data.seeds(name, other):
            missing.append(seed)
            parts.append(f"seed {seed}: no {label} run")
            continue
        a, b = data.run(name, "imf", seed), data.run(name, other, seed)
        texts = []
        for what, key in (("coverage", "score"), ("success", "success")):
            text, clear = gap(a, b, key, points=key == "success")
            texts.append(f"{what} {text}")
            found[what].append((seed, clear, "imf-1" if a[f"holdout_{key}"] > b[f"holdout_{key}"] else label))
        parts.append(f"seed {seed}: {', '.join(texts)}")
    readings = "; ".join(_reading(what, found[what], missing) for what in found)
    return [f"- imf-1 minus {label}, holdout, per training seed: {'; '.join(parts)}. Reading: {readings}."]


def _seeds(seeds: list[int]) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def _reading(what: str, found: list[tuple[int, bool, str]], missing: list[int]) -> str:
    """One measure across the training seeds: who is ahead beyond 1.96 SE where, and a tie only
    where every seed was measured and none is beyond."""
    unmeasured = f" ({_seeds(missing)} not measured)" if missing else ""
    within = [seed for seed, clear, _ in found if not clear]
    leaders: dict[str, list[int]] = {}
    for seed, clear, ahead in found:
        if clear:
            leaders.setdefault(ahead, []).append(seed)
    if not leaders:
        return (f"{what} within 1.96 SE at {_seeds(within)}{unmeasured}, so no tie is claimed" if missing
                else f"{what} within 1.96 SE at every seed (a tie by that rule)")
    if len(leaders) == 1 and not within and not missing:
        return f"{what} {next(iter(leaders))} ahead beyond 1.96 SE at every seed"
    said = [f"{ahead} ahead beyond 1.96 SE at {_seeds(seeds)}" for ahead, seeds in leaders.items()]
    said += [f"within it at {_seeds(within)}"] if within else []
    return f"{what} {', '.join(said)}{unmeasured}"


def comparisons(data: Data, name: str) -> list[str]:
    """imf against ddpm-100 and flow-1, each where it has runs (and says so where it has none)."""
    lines = []
    for other, label in (("ddpm", "ddpm-100"), ("flow", "flow-1")):
        if data.seeds(name, other):
            lines += comparison(data, name, other, label)
        else:
            lines.append(f"- {label}: no run on the holdout yet, so no comparison with it is stated.")
    return lines


def eval_seconds(data: Data, name: str, objective: str) -> str:
    values = [round(r["eval_s"]) for r in data[name] if r.get("objective") == objective]
    return f"{min(values)}-{max(values)} s" if min(values) != max(values) else f"{values[0]} s"


# what an equal-compute record ran at, where that is not its preset's setting today
COMPARED_AT = {"keypoints": "the same backbone",
               "image_twostep": "the same backbone and encoder, two observation steps: the image preset before "
                                "its ablations",
               "image": "the same backbone and encoder: the image preset's settings"}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def equal_in(data: Data, name: str) -> str:
    """What a record's runs were equal in: the CPU-minutes of their budget, or, where ddpm and flow
    trained a number of samples beside imf's budgeted runs, those samples times their step's CPU a
    sample against imf's (benchmarks/speed/image_step.py: one run, the steps interleaved)."""
    imf = [data.run(name, "imf", seed) for seed in data.seeds(name)]
    minutes = imf[0]["budget_s"] / 60
    sized = [r for r in data[name] if r["objective"] != "imf" and not r.get("budget_s")]
    if not sized:
        return f"{minutes:.0f} CPU-minutes a run"
    step = data["image_step"]
    shipped = step["variants"]["shipped"]["cpu_s_per_step"]
    imf_samples = _mean([r["samples"] for r in imf])
    joined = sorted({r["record"] for r in imf if r.get("record")})
    parts = []
    for objective in sorted({r["objective"] for r in sized}):
        variant = step["variants"].get(f"objective.name={objective}")
        if variant is None:
            raise ClaimError(f"{data.folder / 'image_step.json'}: no step of objective.name={objective} to "
                             f"weigh its samples by")
        cost = variant["cpu_s_per_step"] / shipped
        samples = _mean([r["samples"] for r in sized if r["objective"] == objective])
        parts.append(f"{objective} {samples / 1e6:.2f}M samples at {cost:.2f}x imf's CPU a sample, "
                     f"{samples * cost / imf_samples:.2f}x imf's compute")
    whose = f"the preset's own runs ({', '.join(joined)}), " if joined else ""
    return (f"imf: {whose}{minutes:.0f} CPU-minutes, {imf_samples / 1e6:.2f}M samples; {'; '.join(parts)} "
            f"(CPU a sample: benchmarks/speed/image_step.py, the steps interleaved in one run, {step['measured']})")


def equal_compute(data: Data, name: str) -> list[str]:
    """imf-1 against ddpm-100 and flow-1 from one kind of observation, and their evaluation cost."""
    what = "images" if name.startswith("image") else name
    lines = [f"- Equal compute from {what} ({COMPARED_AT[name]}; {equal_in(data, name)}), imf at one sampling "
             f"step against ddpm at 100 and flow at one; a difference is claimed beyond 1.96 SE, a tie only where "
             f"every seed ties:",
             *("  " + line for line in comparisons(data, name))]
    if data.seeds(name, "ddpm"):
        joined = any(r.get("record") for r in data[name])
        lines.append(f"  A 50-episode evaluation took {eval_seconds(data, name, 'imf')} for imf-1 against "
                     f"{eval_seconds(data, name, 'ddpm')} for ddpm-100"
                     + (f" and {eval_seconds(data, name, 'flow')} for flow-1" if joined else "")
                     + " (one process each, the shared machine"
                     + ("; imf-1's on its own record's machine, flow-1 runs the same one network pass)" if joined else ")")
                     + ".")
    return lines


def step_costs(data: Data) -> list[str]:
    """The CPU a sample of the flow and ddpm steps against imf's, from image_step.json."""
    step = data["image_step"]
    shipped = step["variants"]["shipped"]["cpu_s_per_step"]
    costs = [f"{objective} {step['variants'][f'objective.name={objective}']['cpu_s_per_step'] / shipped:.2f}x"
             for objective in ("flow", "ddpm") if f"objective.name={objective}" in step["variants"]]
    if not costs:
        raise ClaimError(f"{data.folder / 'image_step.json'}: no flow or ddpm step measured")
    return [f"- CPU a training sample against the iMF step's (image_step.json, {step['measured']}, median of "
            f"{step['reps']} interleaved rounds): {', '.join(costs)}. The iMF loss differentiates the network "
            f"along its input (a JVP) beside the backward pass; flow and ddpm do not, so at equal CPU they train "
            f"on more samples."]
