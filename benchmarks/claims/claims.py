"""The published numbers, written from committed JSON: the passages of README.md, docs/*.md
(docs/learning.md: "Does it learn?"), benchmarks/RESULTS.md and benchmarks/RUNS.md are
generated here from benchmarks/learning_results/*.json, never typed.

    python benchmarks/claims/claims.py            # rewrite every passage between its markers
    python benchmarks/claims/claims.py --check    # exit 1 naming the first passage that disagrees

A passage sits between ``<!-- claims:NAME -->`` and ``<!-- /claims:NAME -->``, in whichever one
of those files holds the markers. A number edited by hand, or a run removed from the JSON, makes ``--check`` fail (tests/test_claims.py). ``--check``
also runs the holdout ledger's check (holdout_ledger.py) and the register of every other published
number (published_numbers.py). Claims are
holdout numbers (seeds 900000.., looked at once per run, settings chosen before the look);
selection numbers are labelled as what chose a setting.
"""
from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))  # benchmarks/learning/
import holdout_ledger  # noqa: E402
import published_numbers  # noqa: E402
from claims_base import KEYPOINTS_BEFORE_47, ClaimError, Data, coverage_success, cpu_minutes, pct, preset  # noqa: E402
from claims_choices import (HORIZON_CHOICES, HORIZON_RULE_RUNS, IMAGE_AGAINST, KEYPOINT_CHOICES, SCHEDULE_CHOICE, image_choices,  # noqa: E402
                            image_samples_choices)
from claims_attention import readme_attention, results_attention  # noqa: E402
from claims_compare import comparisons, equal_compute, equal_in, step_costs  # noqa: E402
from claims_data import readme_more_data, results_curricula, results_data_scaling  # noqa: E402
from claims_horizon import horizon_lines  # noqa: E402
from claims_samples import filmstrip_lines, image_limits, samples_lines  # noqa: E402
from claims_presets import (budget_choice, learning_curves, presets_made_by, readme_learning,  # noqa: E402
                            readme_presets, results_presets_answer, seed_pairs, selection_gaps)

ROOT = Path(__file__).resolve().parents[2]


def schedule_lines(data: Data) -> list[str]:
    """The equal-samples lead (the constant learning rate) at the preset's own samples, against the
    preset's own runs on the selection seeds, per training seed."""
    name, other = "ablations_image_schedule", "image_preset"
    pairs = seed_pairs(data, name, other)
    lines = [f"Against the preset's own runs ({other}.json: the cosine schedule) on the "
             f"{pairs[0][1]['selection_episodes']} selection seeds, per training seed (written by "
             f"benchmarks/claims/claims.py from benchmarks/learning_results/{name}.json). These numbers chose, so they "
             f"are not claims; nothing was adopted, so no holdout was looked at."]
    for seed, a, b in pairs:
        cov, suc, verdict = selection_gaps(a, b)
        change = ", ".join(f"`{c}`" for c in a["change"] if not c.startswith("training.seed="))
        lines.append(f"- seed {seed}, {change} ({a['name']}), {a['samples'] / 1e6:.2f}M samples in "
                     f"{a['train_min']:.0f} CPU-minutes against {b['samples'] / 1e6:.2f}M in {cpu_minutes(b):.0f}: "
                     f"selection coverage {cov}, success {suc}: {verdict}. Best test rollout (the maximum of the "
                     f"rollouts that chose best.pt, 50 seeds each): {a['best_test_score']:.3f} against "
                     f"{b['best_test_score']:.3f}.")
    return lines + [SCHEDULE_CHOICE]


def results_objectives_answer(data: Data) -> list[str]:
    """RESULTS' answer to "imf against ddpm and flow": per training seed, at equal compute."""
    return [*equal_compute(data, "keypoints"), *equal_compute(data, "image")]


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
        f"(benchmarks/learning/anchors.py): holding still {hold['mean']:.3f}, the scripted expert {expert['mean']:.3f}.",
    ]


def results_learning(data: Data, name: str, compare: bool = True) -> list[str]:
    """RESULTS' reading of one learning.py table: selection beside holdout, per run; then imf
    against ddpm and flow where ``compare`` (a record of one preset's own runs has only imf)."""
    whose = {"image": "the equal-compute image runs (imf: the preset's own runs; ddpm-100 and flow-1 trained "
                      "to their compute)",
             "image_twostep": "the equal-compute image runs at two observation steps, before the preset's "
                              "ablations",
             "image_preset": "the image preset's runs (the boundary tangent)",
             "image_preset_latest": "the image preset's runs at its current settings",
             "image_preset_k14": "the image preset's runs scored at best.pt, before latest.pt",
             "image_preset_h16": "the image preset's runs executing 8 of its 16 planned actions, before 14",
             "image_preset_2step": "the image preset's runs at a 10-step plan, before 16",
             "image_preset_vhead": "the image preset's runs at one sampling step, before two",
             "keypoints_preset_latest": "the keypoint preset's runs at its current settings",
             "keypoints_preset_h16": "the keypoint preset's runs scored at best.pt, before latest.pt",
             "keypoints_preset_2step": "the keypoint preset's runs at a 10-step plan, before 16",
             "keypoints_preset_lr4e3": "the keypoint preset's runs at learning rate 4e-3 and one sampling step, "
                                       "before two",
             "keypoints_preset64": "the keypoint preset's runs at 64 x 2 and learning rate 2e-3, before 4e-3",
             "keypoints_preset": "the keypoint preset's runs at 128 x 2, before n_emb 64",
             "keypoints": f"the keypoints runs (the keypoint preset before issue #47: {KEYPOINTS_BEFORE_47})",
             "image_preset30": "the image preset's runs at 30 CPU-minutes, before its budget was raised"}.get(
                 name, f"the {name} runs")
    lines = [f"What {whose} say (written by benchmarks/claims/claims.py from "
             f"benchmarks/learning_results/{name}.json; holdout = the claim, selection = what a "
             f"choice between runs would use):"]
    for run in data[name]:
        if "holdout_score" not in run:
            raise ClaimError(f"benchmarks/learning_results/{name}.json: run {run.get('id')} has no holdout look")
        best = f"{run['best_test_score']:.3f} with {pct(run['best_test_success'])} success at epoch {run['best_epoch']}"
        scored = Path(run.get("holdout_checkpoint") or "best.pt").name
        lines.append(f"- {run['label']}: {run['steps']} steps ({run['samples'] / 1e6:.2f}M samples) in "
                     f"{run['train_min']:.0f} CPU-minutes; best test rollout {best}; "
                     + ("" if scored == "best.pt" else f"{scored} scored: ") + "selection "
                     f"{coverage_success(run, 'selection')}; holdout {coverage_success(run)}, "
                     f"{run['holdout_near_misses']} of {run['holdout_episodes']} holdout episodes near misses "
                     f"(score >= 0.90 without success).")
    return lines + (comparisons(data, name) if compare else [])


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
    sized = not any(r.get("budget_s") for r in rows)  # every run trained a fixed number of samples
    equal = ("Each pair is equal in training samples, not in CPU seconds: the CPU ratio is the change's own "
             "cost per sample and the load beside it" if sized else "Each pair is equal in CPU seconds, not in "
             "samples: the samples ratio is the change's own cost and the load beside it")
    lines = [f"Against {baseline} on the 200 selection seeds{after} (written by benchmarks/claims/claims.py from "
             f"benchmarks/learning_results/{name}.json). {equal}. These numbers chose the "
             f"settings, so they are not claims: the shipped preset's numbers are its holdout runs (Learning).",
             f"- {baseline}: selection {coverage_success(base, 'selection')}."]
    for row in _by_baseline(rows, baseline, against):
        ref = by_name[against.get(row["name"], baseline)]
        cov, suc, verdict = selection_gaps(row, ref)
        change = ", ".join(f"`{c}`" for c in row["change"]) or "the preset of its day, unchanged"
        versus = f" ({row['name']}" + ("" if ref is base else f", against {ref['name']}") + ")"
        lines.append(f"- {change}{versus}: coverage {cov}, success {suc}: {verdict}, at "
                     f"{row['samples'] / ref['samples']:.2f}x the samples ({row['samples'] / 1e6:.2f}M against "
                     f"{ref['samples'] / 1e6:.2f}M)"
                     + (f" and {row['train_min'] / ref['train_min']:.2f}x the CPU seconds" if sized else "")
                     + f". {adopted.get(row['name'], 'Not adopted.')}")
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


# Each passage by the name on its markers; the file that holds the markers is found (PUBLISHED),
# so a passage can move between README, docs/ and RESULTS without a change here.
PASSAGES: dict[str, Callable[[Data], list[str]]] = {
    "readme-attention": readme_attention,
    "results-attention-answer": readme_attention,
    "results-presets-answer": results_presets_answer,
    "results-presets-made-by": presets_made_by,
    "learning-curves": learning_curves,
    "results-objectives-answer": results_objectives_answer,
    "results-attention": results_attention,
    "results-data-scaling": results_data_scaling,
    "results-curricula": results_curricula,
    "learning-more-data": readme_more_data,
    "readme-main-job": readme_main_job,
    "readme-presets": readme_presets,
    "learning": readme_learning,
    "results-learning-keypoints": lambda d: results_learning(d, "keypoints"),
    "results-learning-keypoints-preset": lambda d: results_learning(d, "keypoints_preset", compare=False),
    "results-learning-keypoints-preset64": lambda d: results_learning(d, "keypoints_preset64", compare=False),
    "results-learning-keypoints-preset-lr4e3": lambda d: results_learning(d, "keypoints_preset_lr4e3", compare=False),
    "results-learning-keypoints-preset-2step": lambda d: results_learning(d, "keypoints_preset_2step", compare=False),
    "results-learning-keypoints-preset-h16": lambda d: results_learning(d, "keypoints_preset_h16", compare=False),
    "results-learning-keypoints-preset-latest": lambda d: results_learning(d, "keypoints_preset_latest",
                                                                           compare=False),
    "results-learning-image-preset-vhead": lambda d: results_learning(d, "image_preset_vhead", compare=False),
    "results-learning-image-preset-2step": lambda d: results_learning(d, "image_preset_2step", compare=False),
    "results-learning-image-preset-h16": lambda d: results_learning(d, "image_preset_h16", compare=False),
    "results-learning-image-preset-k14": lambda d: results_learning(d, "image_preset_k14", compare=False),
    "results-learning-image-preset-latest": lambda d: results_learning(d, "image_preset_latest", compare=False),
    "results-learning-image": lambda d: [
        *results_learning(d, "image"), f"- What the comparison was equal in: {equal_in(d, 'image')}."],
    "results-image-step": step_costs,
    "results-learning-image-twostep": lambda d: results_learning(d, "image_twostep"),
    "results-learning-image-preset": lambda d: [
        *results_learning(d, "image_preset"), budget_choice(d, "image_preset", "image_preset30")],
    "results-learning-image-preset30": lambda d: results_learning(d, "image_preset30"),
    "results-learning-keypoints30": lambda d: results_learning(d, "keypoints30"),
    "results-ablations-image": lambda d: results_ablations(
        d, "ablations_image", "img30-base", image_choices(d), IMAGE_AGAINST),
    "results-ablations-image-samples": lambda d: results_ablations(
        d, "ablations_image_samples", "img800k-base", image_samples_choices(d)),
    "results-ablations-image-schedule": schedule_lines,
    "results-image-limits": image_limits,
    "results-filmstrip-image": filmstrip_lines,
    "results-samples": samples_lines,
    "results-action-horizon-image": lambda d: horizon_lines(d, HORIZON_CHOICES, HORIZON_RULE_RUNS),
    "learning-samples": samples_lines,
    "results-ablations-keypoints": lambda d: results_ablations(d, "ablations_keypoints", "base1800", KEYPOINT_CHOICES),
}


def published(root: Path) -> list[Path]:
    """The published text a passage may live in: README.md, docs/*.md, benchmarks/RESULTS.md and
    benchmarks/RUNS.md (every run behind RESULTS' answers)."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "benchmarks" / "RESULTS.md",
            root / "benchmarks" / "RUNS.md"]


def _begin(name: str) -> str:
    return f"<!-- claims:{name} -->\n"


def locate(root: Path, name: str, texts: dict[Path, str]) -> Path:
    """The one published file that holds passage ``name``'s opening marker."""
    found = [path for path in texts if _begin(name) in texts[path]]
    if len(found) != 1:
        where = ", ".join(str(p.relative_to(root)) for p in found) if found else (
            "in none of README.md, docs/*.md, benchmarks/RESULTS.md, benchmarks/RUNS.md")
        what = "are missing" if not found else "appear in more than one file"
        raise ClaimError(f"the markers of passage {name!r} {what} ({_begin(name).strip()} ... "
                         f"<!-- /claims:{name} -->: {where})")
    return found[0]


def _span(text: str, name: str, path: Path) -> tuple[int, int]:
    begin, end = _begin(name), f"<!-- /claims:{name} -->"
    start = text.find(begin)
    stop = text.find(end, start + len(begin)) if start >= 0 else -1
    if start < 0 or stop < 0 or text.find(begin, start + 1) >= 0:
        raise ClaimError(f"{path}: the markers of passage {name!r} are missing or doubled ({begin.strip()} ... {end})")
    return start + len(begin), stop


def run(root: Path, check: bool) -> list[str]:
    """Rewrite (or with ``check`` compare) every passage; the problems found, one line each."""
    data, problems = Data(root), []
    texts = {path: path.read_text() for path in published(root) if path.is_file()}
    for name, render in PASSAGES.items():
        try:
            path = locate(root, name, texts)
            file = path.relative_to(root).as_posix()
            start, stop = _span(texts[path], name, path)
            wanted = "\n".join(_wrap(line) for line in render(data)) + "\n"
        except (ClaimError, KeyError, OSError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        current = texts[path][start:stop]
        if current != wanted:
            if check:
                problems.append(f"{file}, passage {name}: {_first_difference(current, wanted)}; "
                                f"run `python benchmarks/claims/claims.py` to write it from the JSON")
            texts[path] = texts[path][:start] + wanted + texts[path][stop:]
    if check:  # the look counts in the JSON are the ledger's; every other published number is registered
        problems += holdout_ledger.check(root)
        problems += published_numbers.check(root)
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
