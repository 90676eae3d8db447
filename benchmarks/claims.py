"""The published numbers, written from committed JSON: README's "Does it learn?" and RESULTS'
reading passages are generated here from benchmarks/learning_results/*.json, never typed.

    python benchmarks/claims.py            # rewrite every passage between its markers
    python benchmarks/claims.py --check    # exit 1 naming the first passage that disagrees

A passage sits between ``<!-- claims:NAME -->`` and ``<!-- /claims:NAME -->``. A number edited by
hand, or a run removed from the JSON, makes ``--check`` fail (tests/test_claims.py). Claims are
holdout numbers (seeds 900000.., looked at once per run, settings chosen before the look);
selection numbers are labelled as what chose a setting.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import yaml

from claims_choices import HORIZON_CHOICES, IMAGE_AGAINST, IMAGE_CHOICES, KEYPOINT_CHOICES
from claims_data import readme_more_data, results_curricula, results_data_scaling
from claims_horizon import horizon_lines
from claims_samples import filmstrip_lines, image_limits, samples_lines

ROOT = Path(__file__).resolve().parent.parent
Z = 1.96


class ClaimError(Exception):
    """A passage cannot be written or checked: a JSON file, a run or a marker is missing."""


class Data:
    """The JSON under ``root``/benchmarks/learning_results, loaded on first use."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "benchmarks" / "learning_results"
        self._files: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._files:
            path = self.folder / f"{name}.json"
            if not path.is_file():
                raise ClaimError(f"{path} is missing: its passages cannot be written")
            self._files[name] = json.loads(path.read_text())
        return self._files[name]

    def run(self, name: str, objective: str, seed: int) -> dict[str, Any]:
        found = [r for r in self[name] if r.get("objective") == objective and r.get("seed") == seed]
        if len(found) != 1 or "holdout_score" not in found[0]:
            raise ClaimError(f"{self.folder / name}.json: expected one {objective} run of training seed "
                             f"{seed} with a holdout look, found {len(found)}")
        return found[0]

    def seeds(self, name: str, objective: str = "imf") -> list[int]:
        """The training seeds of ``objective``'s runs; for imf (every passage's subject) at least one."""
        seeds = sorted({r["seed"] for r in self[name] if r.get("objective") == objective})
        if not seeds and objective == "imf":
            raise ClaimError(f"{self.folder / name}.json holds no imf run with its objective and seed")
        return seeds


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def coverage_success(run: dict[str, Any], prefix: str = "holdout") -> str:
    return (f"{run[f'{prefix}_score']:.3f} ± {run[f'{prefix}_score_se']:.3f} coverage, "
            f"{pct(run[f'{prefix}_success'])} ± {100 * run[f'{prefix}_success_se']:.1f} success")


def gap(a: dict[str, Any], b: dict[str, Any], key: str, points: bool = False,
        seeds: str = "holdout") -> tuple[str, bool]:
    """a - b on ``seeds`` with its SE and z; whether it is beyond 1.96 SE."""
    diff = a[f"{seeds}_{key}"] - b[f"{seeds}_{key}"]
    se = math.hypot(a[f"{seeds}_{key}_se"], b[f"{seeds}_{key}_se"])
    z = diff / se if se > 0 else (0.0 if diff == 0 else math.inf)
    scale, unit, digits = (100, " points", 1) if points else (1, "", 3)
    return f"{scale * diff:+.{digits}f} ± {scale * se:.{digits}f}{unit} (z {z:+.2f})", abs(z) > Z


def comparison(data: Data, name: str, other: str, label: str) -> list[str]:
    """imf against ``other`` per training seed: a tie only where every seed ties, and no claim
    across seeds where one of them has no run of ``other``."""
    seeds = data.seeds(name)
    parts, beyond, missing = [], [], []
    for seed in seeds:
        if seed not in data.seeds(name, other):
            missing.append(seed)
            parts.append(f"seed {seed}: no {label} run")
            continue
        a, b = data.run(name, "imf", seed), data.run(name, other, seed)
        cov, cov_clear = gap(a, b, "score")
        suc, suc_clear = gap(a, b, "success", points=True)
        parts.append(f"seed {seed}: coverage {cov}, success {suc}")
        for what, key, clear in (("coverage", "score", cov_clear), ("success", "success", suc_clear)):
            if clear:
                ahead = "imf-1" if a[f"holdout_{key}"] > b[f"holdout_{key}"] else label
                beyond.append(f"seed {seed}'s {what} ({ahead} ahead)")
    if not data.seeds(name, other):
        raise ClaimError(f"{data.folder / name}.json has no {other} run")
    if beyond:
        reading = f"not a tie: {', '.join(beyond)} beyond 1.96 SE"
        reading += f"; seed {', '.join(map(str, missing))} not measured" if missing else ""
    elif missing:
        reading = (f"no difference beyond 1.96 SE where measured; with no {label} run at seed "
                   f"{', '.join(map(str, missing))}, no tie is claimed across seeds")
    else:
        reading = "a tie: no difference beyond 1.96 SE on any seed"
    return [f"- imf-1 minus {label}, holdout, per training seed: {'; '.join(parts)}. Reading: {reading}."]


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


def preset(data: Data, name: str) -> dict[str, Any]:
    """A shipped preset's own YAML (its keys as written, without its base)."""
    return yaml.safe_load((data.folder.parents[1] / "imf" / "configs" / f"{name}.yaml").read_text())


def anchors_line(data: Data) -> str:
    a = data["anchors"]
    return (f"Anchors on the same 200 holdout seeds (benchmarks/anchors.py): holding still "
            f"{a['hold_still']['holdout']['mean']:.3f} coverage and {pct(a['hold_still']['holdout']['success_rate'])} "
            f"success, the scripted expert {a['expert']['holdout']['mean']:.3f} and "
            f"{pct(a['expert']['holdout']['success_rate'])}.")


def preset_line(data: Data, name: str, what: str) -> str:
    runs = [data.run(name, "imf", seed) for seed in data.seeds(name)]
    minutes = runs[0]["budget_s"] / 60
    per_seed = "; ".join(f"seed {r['seed']}: **{coverage_success(r)}**" for r in runs)
    samples = ", ".join(f"{r['samples'] / 1e6:.2f}M" for r in runs)
    return (f"- `{runs[0]['preset']}` ({what}, {minutes:.0f} training minutes, its default), two training "
            f"seeds, holdout: {per_seed} ({samples} training samples).")


def budget_choice(data: Data, name: str, other: str) -> str:
    """How the image preset's budget was chosen: ``name``'s runs against ``other``'s (the same
    settings at another budget) on the selection seeds, per training seed."""
    a_min, b_min = (data.run(n, "imf", data.seeds(n)[0])["budget_s"] / 60 for n in (name, other))
    parts = []
    for seed in sorted(set(data.seeds(name)) & set(data.seeds(other))):
        a, b = data.run(name, "imf", seed), data.run(other, "imf", seed)
        cov, _ = gap(a, b, "score", seeds="selection")
        suc, _ = gap(a, b, "success", points=True, seeds="selection")
        parts.append(f"seed {seed}: coverage {cov}, success {suc}")
    if not parts:
        raise ClaimError(f"{data.folder}: {name}.json and {other}.json share no training seed")
    first = data.run(name, "imf", data.seeds(name)[0])
    shipped = preset(data, first["preset"])["training"]["time_budget_s"] / 60
    return (f"- Its budget was chosen on the selection seeds ({first['selection_episodes']} episodes each, "
            f"not the holdout): "
            f"{a_min:.0f} CPU-minutes minus {b_min:.0f}, per training seed: {'; '.join(parts)}. "
            f"The preset ships {shipped:.0f}.")


# what an equal-compute record ran at, where that is not its preset's setting today
COMPARED_AT = {"keypoints": "the same backbone",
               "image": "the same backbone and encoder, two observation steps: the image preset before its ablations"}


def equal_compute(data: Data, name: str) -> list[str]:
    """imf-1 against ddpm-100 and flow-1 from one kind of observation, and their evaluation cost."""
    minutes = data.run(name, "imf", data.seeds(name)[0])["budget_s"] / 60
    lines = [f"- Equal compute from {'images' if name == 'image' else name} ({COMPARED_AT[name]}; "
             f"{minutes:.0f} minutes), imf at one sampling step against ddpm at 100 and flow at one; a "
             f"difference is claimed beyond 1.96 SE, a tie only where every seed ties:",
             *("  " + line for line in comparisons(data, name))]
    if data.seeds(name, "ddpm"):
        lines.append(f"  A 50-episode evaluation took {eval_seconds(data, name, 'imf')} for imf-1 against "
                     f"{eval_seconds(data, name, 'ddpm')} for ddpm-100 (one process each, the shared machine).")
    return lines


def readme_learning(data: Data) -> list[str]:
    ref = data["references"]["lerobot_diffusion_pusht"]
    names = ("keypoints", "image", "image_preset", "image_preset30")
    most = max(r["samples"] for name in names for r in data[name] if r.get("objective") == "imf")
    episodes = {preset(data, data.run(n, "imf", data.seeds(n)[0])["preset"])["data"]["demo_episodes"] for n in names}
    return [
        "Every number here is a run's best checkpoint (chosen on the 50 test seeds) scored on 200 "
        "**holdout** seeds (900000..), once: the presets' settings were chosen before, on the test and "
        "selection seeds, and nothing was chosen by these (imf/config/eval_seeds.py). "
        + anchors_line(data),
        "",
        f"Data: {' and '.join(map(str, sorted(episodes)))} scripted demonstrations (imf's expert, made on the machine). One torch thread a "
        "run, its budget on the cpu clock, on a 2-core machine shared with other work "
        "(benchmarks/learning.py; JSON in benchmarks/learning_results/). A CPU-minute is that machine's: "
        "the training samples beside each result, and the samples figure below, are what carry to "
        "another (benchmarks/RESULTS.md, \"The image preset against its target, and what limits it\").",
        "",
        preset_line(data, "keypoints", "the T's 9 keypoints and the agent position, 128 x 2"),
        preset_line(data, "image_preset", "96 x 96 images and the agent position, one frame a step, the small encoder"),
        "  " + budget_choice(data, "image_preset", "image_preset30").removeprefix("- "),
        *equal_compute(data, "keypoints"),
        *equal_compute(data, "image"),
        f"- For scale, other data and compute: {ref['what']}: {ref['coverage']:.3f} "
        f"coverage and {pct(ref['success'])} success over {ref['episodes']} episodes after "
        f"{ref['samples'] / 1e6:.1f}M training samples ({ref['steps'] // 1000}k steps of {ref['batch_size']}), "
        f"trained on {ref['data']}. imf's runs above saw {100 * most / ref['samples']:.0f}% of those samples "
        f"at most ({most / 1e6:.2f}M), on a CPU.",
    ]


def readme_main_job(data: Data) -> list[str]:
    """How to read the main job's report: equal time, not equal steps."""
    demo = preset(data, "demo")
    minutes = demo["training"]["time_budget_s"] / 60
    hold = data["anchors"]["hold_still"]["test"]
    expert = data["anchors"]["expert"]["test"]
    return [
        f"Reading its report: both trials train for the same {minutes:g} minutes (the wall clock), so it "
        "compares them at equal training time. The narrower model makes more optimizer steps in those "
        "minutes, and the report's trend line says so (\"this compares throughput as much as width\"): "
        "under a time budget a width trend is about speed at equal time, not about width at equal "
        "steps (the mission's grid compares at equal epochs). Anchors on the same 50 test seeds "
        f"(benchmarks/anchors.py): holding still {hold['mean']:.3f}, the scripted expert {expert['mean']:.3f}.",
    ]


def results_learning(data: Data, name: str) -> list[str]:
    """RESULTS' reading of one learning.py table: selection beside holdout, per run."""
    whose = {"image_preset": "the image preset's runs",
             "image_preset30": "the image preset's runs at 30 CPU-minutes, before its budget was raised"}.get(
                 name, f"the {name} runs")
    lines = [f"What {whose} say (written by benchmarks/claims.py from "
             f"benchmarks/learning_results/{name}.json; holdout = the claim, selection = what a "
             f"choice between runs would use):"]
    for run in data[name]:
        if "holdout_score" not in run:
            raise ClaimError(f"benchmarks/learning_results/{name}.json: run {run.get('id')} has no holdout look")
        best = f"{run['best_test_score']:.3f} with {pct(run['best_test_success'])} success at epoch {run['best_epoch']}"
        lines.append(f"- {run['label']}: {run['steps']} steps ({run['samples'] / 1e6:.2f}M samples) in "
                     f"{run['train_min']:.0f} minutes; best test rollout {best}; selection "
                     f"{coverage_success(run, 'selection')}; holdout {coverage_success(run)}, "
                     f"{run['holdout_near_misses']} of {run['holdout_episodes']} holdout episodes near misses "
                     f"(score >= 0.90 without success).")
    return lines + comparisons(data, name)


def results_ablations(data: Data, name: str, baseline: str, adopted: dict[str, str],
                      against: dict[str, str] | None = None) -> list[str]:
    """Each ablation against its baseline on the selection seeds: the numbers that chose.
    ``against``: the rows run after an adopted change, each against the run of that change."""
    rows, against = data[name], against or {}
    by_name = {r["name"]: r for r in rows}
    for wanted in {baseline, *(against[r["name"]] for r in rows if r["name"] in against)}:
        if wanted not in by_name:
            raise ClaimError(f"benchmarks/learning_results/{name}.json: no baseline run {wanted!r}")
    base = by_name[baseline]
    after = ", or the run named where a row was run after a change was adopted" if against else ""
    lines = [f"Against {baseline} on the 200 selection seeds{after} (written by benchmarks/claims.py from "
             f"benchmarks/learning_results/{name}.json). Each pair is equal in CPU seconds, not in samples: "
             f"the samples ratio is the change's own cost and the load beside it. These numbers chose the "
             f"settings, so they are not claims: the shipped preset's numbers are its holdout runs (Learning).",
             f"- {baseline}: selection {coverage_success(base, 'selection')}."]
    for row in _by_baseline(rows, baseline, against):
        ref = by_name[against.get(row["name"], baseline)]
        cov, cov_clear = gap(row, ref, "score", seeds="selection")
        suc, suc_clear = gap(row, ref, "success", points=True, seeds="selection")
        beyond = [what for what, clear in (("coverage", cov_clear), ("success", suc_clear)) if clear]
        verdict = f"beyond noise on {' and '.join(beyond)}" if beyond else "within noise on both"
        change = ", ".join(f"`{c}`" for c in row["change"]) or "the preset of its day, unchanged"
        versus = f" ({row['name']}" + ("" if ref is base else f", against {ref['name']}") + ")"
        lines.append(f"- {change}{versus}: coverage {cov}, success {suc}: {verdict}, at "
                     f"{row['samples'] / ref['samples']:.2f}x the samples ({row['samples'] / 1e6:.2f}M against "
                     f"{ref['samples'] / 1e6:.2f}M). {adopted.get(row['name'], 'Not adopted.')}")
    return lines


def _by_baseline(rows: list[dict[str, Any]], baseline: str, against: dict[str, str]) -> list[dict[str, Any]]:
    """The rows against ``baseline`` first, each followed by the rows run against it."""
    ordered, refs = [], [baseline]
    while refs:
        ref = refs.pop(0)
        mine = [r for r in rows if r["name"] != baseline and against.get(r["name"], baseline) == ref]
        ordered += mine
        refs += [r["name"] for r in mine]
    return ordered


PASSAGES: dict[str, tuple[str, Callable[[Data], list[str]]]] = {
    "results-data-scaling": ("benchmarks/RESULTS.md", results_data_scaling),
    "results-curricula": ("benchmarks/RESULTS.md", results_curricula),
    "readme-more-data": ("README.md", readme_more_data),
    "readme-main-job": ("README.md", readme_main_job),
    "readme-learning": ("README.md", readme_learning),
    "results-learning-keypoints": ("benchmarks/RESULTS.md", lambda d: results_learning(d, "keypoints")),
    "results-learning-image": ("benchmarks/RESULTS.md", lambda d: results_learning(d, "image")),
    "results-learning-image-preset": ("benchmarks/RESULTS.md", lambda d: [
        *results_learning(d, "image_preset"), budget_choice(d, "image_preset", "image_preset30")]),
    "results-learning-image-preset30": ("benchmarks/RESULTS.md", lambda d: results_learning(d, "image_preset30")),
    "results-learning-keypoints30": ("benchmarks/RESULTS.md", lambda d: results_learning(d, "keypoints30")),
    "results-ablations-image": ("benchmarks/RESULTS.md", lambda d: results_ablations(
        d, "ablations_image", "img30-base", IMAGE_CHOICES, IMAGE_AGAINST)),
    "results-image-limits": ("benchmarks/RESULTS.md", image_limits),
    "results-filmstrip-image": ("benchmarks/RESULTS.md", filmstrip_lines),
    "results-samples": ("benchmarks/RESULTS.md", samples_lines),
    "results-action-horizon-image": ("benchmarks/RESULTS.md", lambda d: horizon_lines(d, HORIZON_CHOICES)),
    "readme-samples": ("README.md", samples_lines),
    "results-ablations-keypoints": ("benchmarks/RESULTS.md",
                                    lambda d: results_ablations(d, "ablations_keypoints", "base1800", KEYPOINT_CHOICES)),
}


def _span(text: str, name: str, path: Path) -> tuple[int, int]:
    begin, end = f"<!-- claims:{name} -->\n", f"<!-- /claims:{name} -->"
    start = text.find(begin)
    stop = text.find(end, start + len(begin)) if start >= 0 else -1
    if start < 0 or stop < 0:
        raise ClaimError(f"{path}: the markers of passage {name!r} are missing ({begin.strip()} ... {end})")
    return start + len(begin), stop


def run(root: Path, check: bool) -> list[str]:
    """Rewrite (or with ``check`` compare) every passage; the problems found, one line each."""
    data, problems, texts = Data(root), [], {}
    for name, (file, render) in PASSAGES.items():
        path = root / file
        texts.setdefault(path, path.read_text())
        try:
            start, stop = _span(texts[path], name, path)
            wanted = "\n".join(_wrap(line) for line in render(data)) + "\n"
        except (ClaimError, KeyError, OSError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        current = texts[path][start:stop]
        if current != wanted:
            if check:
                problems.append(f"{file}, passage {name}: {_first_difference(current, wanted)}; "
                                f"run `python benchmarks/claims.py` to write it from the JSON")
            texts[path] = texts[path][:start] + wanted + texts[path][stop:]
    if not check:  # the passages that could be written are; the others keep their text
        for path, text in texts.items():
            if path.read_text() != text:
                path.write_text(text)
    return problems


def _wrap(line: str, width: int = 96) -> str:
    """A passage line wrapped like the hand-written text around it (list items hang)."""
    indent = " " * (len(line) - len(line.lstrip(" -")))
    return textwrap.fill(line, width, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False) if line else line


def _first_difference(current: str, wanted: str) -> str:
    for i, (a, b) in enumerate(zip(current.splitlines(), wanted.splitlines()), start=1):
        if a != b:
            word = next((x for x, y in zip(re.split(r"(\s+)", a), re.split(r"(\s+)", b)) if x != y), a)
            return f"line {i} of the passage says {word.strip()!r} where the JSON gives {b.strip()[:120]!r}"
    return "the passage has a different number of lines than the JSON gives"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing; exit 1 on a difference")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to read and write (default: this one)")
    args = parser.parse_args()
    problems = run(args.root, args.check)
    for line in problems:
        print(f"claims.py: {line}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print("claims.py: every passage agrees with the JSON" if args.check else "claims.py: passages written")


if __name__ == "__main__":
    main()
