"""The data passages of benchmarks/claims/claims.py: what more demonstrations and the curricula buy,
written from benchmarks/learning_results/data_scaling.json and curricula.json."""
from __future__ import annotations

import math
from typing import Any

from claims_base import KEYPOINTS_BEFORE_47

Z = 1.96


def by_size(records: list[dict]) -> dict[int, list[dict]]:
    sizes: dict[int, list[dict]] = {}
    for r in records:
        sizes.setdefault(r["demo_episodes"], []).append(r)
    return dict(sorted(sizes.items()))


def mean_of(records: list[dict], key: str) -> tuple[float, float]:
    """Mean over the training seeds; SE the larger of the seeds' spread and the episodes' (as the report)."""
    values = [r[key] for r in records]
    mean = sum(values) / len(values)
    episodes = math.sqrt(sum(r[f"{key}_se"] ** 2 for r in records)) / len(records)
    if len(values) < 2:
        return mean, episodes
    seeds = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
    return mean, max(seeds, episodes)


def _step(a: list[dict], b: list[dict], key: str) -> tuple[float, float]:
    (ma, sa), (mb, sb) = mean_of(a, key), mean_of(b, key)
    return mb - ma, math.hypot(sa, sb)


def _words(d: float, se: float, points: bool = False) -> str:
    scale, unit, digits = (100, " points", 1) if points else (1, "", 3)
    return f"{scale * d:+.{digits}f} ± {scale * se:.{digits}f}{unit} (z {d / se if se else 0:+.2f})"


def _beyond(d: float, se: float) -> int:
    return 0 if abs(d) <= Z * se else (1 if d > 0 else -1)


def _size_line(n: int, runs: list[dict]) -> str:
    cov, suc = mean_of(runs, "holdout_score"), mean_of(runs, "holdout_success")
    passes = [r["samples"] / r["train_windows"] for r in runs if r.get("train_windows")]
    seen = f"; {sum(passes) / len(passes):.1f} passes over its training windows in the budget" if passes else ""
    seeds = ", ".join(str(r["seed"]) for r in runs)
    return (f"- {n} demonstrations (training seed{'s' if len(runs) > 1 else ''} {seeds}): holdout "
            f"{cov[0]:.3f} ± {cov[1]:.3f} coverage, {100 * suc[0]:.1f}% ± {100 * suc[1]:.1f} success{seen}.")


def scaling_parts(data: Any) -> dict[str, Any]:
    """The data-scaling reading in parts: a line per size, per step between sizes, the reading,
    budget against data, and the point at the size of Diffusion Policy's human data set."""
    sizes = by_size(data["data_scaling"])
    pairs = list(zip(list(sizes)[:-1], list(sizes)[1:]))
    steps, gains = [], []
    for a, b in pairs:
        common = sorted({r["seed"] for r in sizes[a]} & {r["seed"] for r in sizes[b]})
        if not common:
            gains.append(False)
            steps.append(f"- {a} -> {b}: no training seed run at both sizes, not compared.")
            continue
        runs_a, runs_b = ([r for r in sizes[n] if r["seed"] in common] for n in (a, b))
        cov, suc = _step(runs_a, runs_b, "holdout_score"), _step(runs_a, runs_b, "holdout_success")
        verdict = {1: "more helps", -1: "more hurts"}
        found = [f"{what} {verdict[_beyond(*x)]}" for what, x in (("coverage", cov), ("success", suc)) if _beyond(*x)]
        gains.append(max(_beyond(*cov), _beyond(*suc)) > 0)
        seeds = f"training seed{'s' if len(common) > 1 else ''} {', '.join(map(str, common))}"
        steps.append(f"- {a} -> {b} ({seeds}): coverage {_words(*cov)}, success {_words(*suc, points=True)}: "
                     f"{', '.join(found) or 'within noise on both'}.")
    reference = data["references"]["lerobot_diffusion_pusht"]
    at_200 = None
    if 200 in sizes:
        cov, suc = mean_of(sizes[200], "holdout_score"), mean_of(sizes[200], "holdout_success")
        at_200 = (f"At about the size of Diffusion Policy's human data set ({reference['data']}): "
                  f"200 scripted demonstrations give {cov[0]:.3f} ± {cov[1]:.3f} coverage and "
                  f"{100 * suc[0]:.1f}% ± {100 * suc[1]:.1f} success on the holdout in the same budget "
                  f"(scripted, not human demonstrations, and {sizes[200][0]['samples'] / 1e6:.2f}M samples "
                  f"against its {reference['samples'] / 1e6:.1f}M).")
    spread = [abs(runs[0]["holdout_score"] - runs[1]["holdout_score"]) for runs in sizes.values() if len(runs) == 2]
    if spread and any(len(runs) == 1 for runs in sizes.values()):
        steps.append("- A step of one training seed has the episodes' SE only, not the spread between runs: "
                     "where two seeds ran, their holdout coverage differed by "
                     + (f"{spread[0]:.3f}." if max(spread) == min(spread) else f"{min(spread):.3f} to {max(spread):.3f}."))
    return {"sizes": sizes, "size_lines": [_size_line(n, runs) for n, runs in sizes.items()], "steps": steps,
            "reading": _reading(pairs, gains) + _against_smallest(sizes), "budget": budget_or_data(data, sizes), "at_200": at_200}


def results_data_scaling(data: Any) -> list[str]:
    parts = scaling_parts(data)
    lines = ["What the data-scaling runs say (written by benchmarks/claims/claims.py from "
             "benchmarks/learning_results/data_scaling.json; holdout numbers, mean ± SE over the training "
             "seeds; a step is claimed beyond 1.96 SE):"]
    lines += parts["size_lines"] + parts["steps"] + [f"- Reading: {parts['reading']}"]
    lines += [f"- {text}" for text in (parts["budget"], parts["at_200"]) if text]
    samples = {(r["demo_episodes"], r["seed"]): r["samples"] for r in data["data_scaling"]}
    low, high = min(samples, key=samples.get), max(samples, key=samples.get)
    if samples[high] > 1.05 * samples[low]:
        lines.append(f"- Equal CPU minutes were not equal samples: from {samples[low] / 1e6:.2f}M ({low[0]} "
                     f"demonstrations, seed {low[1]}) to {samples[high] / 1e6:.2f}M ({high[0]}, seed {high[1]}); "
                     f"the runs shared the machine with different loads, and the cpu clock does not remove all "
                     f"of the contention.")
    return lines


def _reading(pairs: list[tuple[int, int]], gains: list[bool]) -> str:
    if not pairs:
        return "only one size was run: no trend."
    last_gain = max((i for i, g in enumerate(gains) if g), default=None)
    if last_gain is None:
        return "no step between adjacent sizes gains beyond noise at this budget."
    after = "; no larger step gains beyond noise" if last_gain < len(pairs) - 1 else ""
    return f"more demonstrations help beyond noise up to {pairs[last_gain][1]}{after} at this budget."


def _against_smallest(sizes: dict[int, list[dict]]) -> str:
    """Which larger sizes beat the smallest beyond noise on coverage (seeds both ran)."""
    order = list(sizes)
    if len(order) < 3:
        return ""
    first, beyond = order[0], []
    for n in order[1:]:
        common = {r["seed"] for r in sizes[first]} & {r["seed"] for r in sizes[n]}
        if common:
            d, se = _step([r for r in sizes[first] if r["seed"] in common],
                          [r for r in sizes[n] if r["seed"] in common], "holdout_score")
            beyond.append((n, d, se))
    ahead = [(n, f"{n} ({_words(d, se)})") for n, d, se in beyond if _beyond(d, se) > 0]
    return (f" Against {first} demonstrations, coverage is ahead beyond noise at "
            f"{', '.join(text for _, text in ahead)}: at this budget, more data helps up to about "
            f"{ahead[0][0]} demonstrations and no further." if ahead
            else f" No size is ahead of {first} demonstrations beyond noise.")


def budget_or_data(data: Any, sizes: dict[int, list[dict]], seed: int = 42, size: int = 500) -> str | None:
    """At the preset's size and one seed, on the selection seeds: twice the budget (the 30-minute
    run of the preset's settings in ablations_keypoints.json) against twice the data."""
    longer = next((r for r in data["ablations_keypoints"] if r["change"] == ["training.lr=2e-3"]), None)
    here = next((r for r in sizes.get(size, []) if r["seed"] == seed), None)
    more = next((r for r in sizes.get(2 * size, []) if r["seed"] == seed), None)
    if longer is None or here is None or more is None:
        return None
    twice = [(x[f"selection_{k}"] - here[f"selection_{k}"], math.hypot(x[f"selection_{k}_se"], here[f"selection_{k}_se"]))
             for x in (longer, more) for k in ("score", "success")]
    budget_pays = any(_beyond(*t) > 0 for t in twice[:2])
    data_pays = any(_beyond(*t) > 0 for t in twice[2:])
    verdict = (f" At {size} demonstrations the budget, not the data, is the limit." if budget_pays and not data_pays
               else f" At {size} demonstrations the data, not the budget, is the limit." if data_pays and not budget_pays
               else " Neither is singled out by these two runs.")
    return (f"Budget or data, at {size} demonstrations (training seed {seed}, selection seeds): twice the budget "
            f"({longer['budget_s'] / 60:.0f} minutes, the preset's settings: ablations_keypoints.json, lr2e3) gives coverage "
            f"{_words(*twice[0])} and success {_words(*twice[1], points=True)}; twice the data ({2 * size} demonstrations, "
            f"{here['budget_s'] / 60:.0f} minutes) gives coverage {_words(*twice[2])} and success "
            f"{_words(*twice[3], points=True)}.{verdict}")


def results_curricula(data: Any) -> list[str]:
    """Each curriculum against none per training seed: the selection gap decides, the holdout is reported."""
    records = data["curricula"]
    base = {r["seed"]: r for r in data["keypoints"] if r["objective"] == "imf"}
    lines = ["What the curricula runs say (written by benchmarks/claims/claims.py from "
             "benchmarks/learning_results/curricula.json against the none runs in keypoints.json; adopted "
             "only beyond noise on the selection seeds at every training seed):"]
    names = sorted({r["curriculum"] for r in records})
    for name in names:
        runs = [r for r in records if r["curriculum"] == name]
        parts, wins, losses = [], [], []
        for r in sorted(runs, key=lambda r: r["seed"]):
            none = base[r["seed"]]
            cov = (r["selection_score"] - none["selection_score"], math.hypot(r["selection_score_se"], none["selection_score_se"]))
            suc = (r["selection_success"] - none["selection_success"],
                   math.hypot(r["selection_success_se"], none["selection_success_se"]))
            hold = (r["holdout_score"] - none["holdout_score"], math.hypot(r["holdout_score_se"], none["holdout_score_se"]))
            hold_success = (r["holdout_success"] - none["holdout_success"],
                            math.hypot(r["holdout_success_se"], none["holdout_success_se"]))
            wins.append(_beyond(*cov) > 0 or _beyond(*suc) > 0)
            losses.append(_beyond(*cov) < 0 or _beyond(*suc) < 0)
            parts.append(f"seed {r['seed']}: selection coverage {_words(*cov)}, success {_words(*suc, points=True)}; "
                         f"holdout coverage {_words(*hold)}, success {_words(*hold_success, points=True)}")
        adopted = len(runs) >= 2 and all(wins) and not any(losses)
        verdict = ("adopted" if adopted else "not adopted") + (
            ": below none beyond noise at a seed" if any(losses) else
            "" if adopted else ": not beyond noise above none at every training seed")
        lines.append(f"- {name} minus none, {'; '.join(parts)}. {verdict[0].upper() + verdict[1:]}.")
    ratios = [r["samples"] / base[r["seed"]]["samples"] for r in records]
    if max(ratios) > 1.05:
        lines.append(f"- Equal CPU minutes were not equal samples: the curricula runs made {min(ratios):.2f} to "
                     f"{max(ratios):.2f} x the none runs' samples at the same seed (they ran on a less loaded "
                     f"machine, and the cpu clock does not remove all of the contention), which favours them.")
    return lines


def readme_more_data(data: Any) -> list[str]:
    """docs/learning.md's "More data": the curve in one line, its reading, budget or data, the curricula."""
    parts = scaling_parts(data)
    minutes = data["data_scaling"][0]["budget_s"] / 60
    per_size = "; ".join(
        f"{n}: {mean_of(runs, 'holdout_score')[0]:.3f} / {100 * mean_of(runs, 'holdout_success')[0]:.1f}%"
        f"{'' if len(runs) > 1 else ' (one seed)'}" for n, runs in parts["sizes"].items())
    lines = [f"`pusht_lowdim_cpu` at its {minutes:.0f} training minutes, at its settings before issue #47 "
             f"({KEYPOINTS_BEFORE_47}), on N scripted demonstrations "
             f"(benchmarks/learning/data_scaling.py; holdout coverage / success, the mean of the training seeds "
             f"run at each size): {per_size}. Reading: {parts['reading']}"]
    lines += ["", parts["budget"]] if parts["budget"] else []
    lines += ["", parts["at_200"]] if parts["at_200"] else []
    curricula = [line.lstrip("- ") for line in results_curricula(data)[1:]]
    lines += ["", "Curricula against none at equal compute (benchmarks/learning/curricula.py; the selection seeds "
              "decide, the holdout is reported):", *[f"- {line}" for line in curricula]]
    return lines
