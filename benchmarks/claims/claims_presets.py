"""The shipped CPU presets' passages: each preset's own runs on the holdout at its current
settings (``SHIPPED``), against issue #47's targets, beside its runs at the settings before
(``EARLIER``), and what the holdout had shown when each preset was last changed."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))  # benchmarks/learning/
import holdout_ledger  # noqa: E402
import run_record  # noqa: E402
from claims_base import KEYPOINTS_BEFORE_47, ClaimError, Data, coverage_success, gap, pct, preset  # noqa: E402
from claims_compare import equal_compute  # noqa: E402

# Each shipped CPU preset: the record of its own runs at its current settings (learning.py --name).
SHIPPED = {"pusht_lowdim_cpu": "keypoints_preset_latest", "pusht_image_cpu": "image_preset_latest"}
# Per preset, newest first: the records of its runs at each earlier version, and how that
# version differed from the one after it.
EARLIER = {
    "pusht_lowdim_cpu": (("keypoints_preset_h16", "best.pt scored, the checkpoint its test rollouts chose"),
                         ("keypoints_preset_2step", "a 10-step plan"),
                         ("keypoints_preset_lr4e3", "one sampling step a plan"),
                         ("keypoints_preset64", "learning rate 2e-3"),
                         ("keypoints_preset", "128 x 2"),
                         ("keypoints", f"128 x 2, {KEYPOINTS_BEFORE_47}")),
    "pusht_image_cpu": (("image_preset_k14", "best.pt scored, the checkpoint its test rollouts chose"),
                        ("image_preset_h16", "8 actions executed a plan"),
                        ("image_preset_2step", "a 10-step plan"),
                        ("image_preset_vhead", "one sampling step a plan"),
                        ("image_preset", "the boundary tangent")),
}
# issue #47: holdout coverage and success at every training seed, within the preset's own budget
TARGETS = {"pusht_lowdim_cpu": (0.95, 0.60), "pusht_image_cpu": (0.95, 0.80)}
EQUAL_COMPUTE_AT = ("- The comparisons of imf against ddpm and flow below ran at the presets' settings before their "
                    f"last change (keypoints: {KEYPOINTS_BEFORE_47}; images: the boundary tangent).")
OBS = {"pusht_lowdim_cpu": "keypoints", "pusht_image_cpu": "image"}  # learning.py --obs, and RUNS' section titles
INPUTS = {"pusht_lowdim_cpu": "the T's 9 keypoints and the agent position",
          "pusht_image_cpu": "96 x 96 images and the agent position, one frame a step, the small encoder"}


def what(data: Data, name: str) -> str:
    """A preset in words, its sizes read from its YAML (merged over its base where it keeps them)."""
    own = preset(data, name)
    policy, training = own.get("policy", {}), own.get("training", {})
    plan = [f"a {policy['horizon']}-step plan"] if "horizon" in policy else []  # else its base's
    parts = [INPUTS[name], f"{policy['n_emb']} x {policy['n_layer']}", *plan, f"batch {training['batch_size']}",
             f"learning rate {float(training['lr']):g}"]
    if "ema_max" in training:
        parts.append(f"EMA capped at {training['ema_max']}")
    steps = own.get("objective", {}).get("sample_steps", 1)
    return ", ".join(parts + ["the v-head tangent"] + ([f"plans sampled in {steps} steps"] if steps != 1 else []))


def checkpoint_phrase(data: Data, record: str) -> str:
    """Which checkpoint of each run a record's holdout numbers score: best.pt unless every imf run
    looked at latest.pt (eval.final_checkpoint)."""
    names = {Path(r.get("holdout_checkpoint") or "best.pt").name for r in data[record] if r.get("objective") == "imf"}
    return ("its last checkpoint (latest.pt)" if names == {"latest.pt"} else
            "its best checkpoint (chosen on the 50 test seeds)")


def scored_checkpoints(data: Data) -> str:
    """Per shipped preset, the checkpoint of each run its record scores."""
    return "; ".join(f"`{name}`: {checkpoint_phrase(data, record)}" for name, record in SHIPPED.items())


def shipped_lines(data: Data) -> list[str]:
    """Per shipped preset: its holdout at its settings, against its target, and at the settings before."""
    lines = []
    for name, record in SHIPPED.items():
        lines.append(preset_line(data, record, what(data, name)))
        lines.append("  " + target_line(data, name, record))
        for i, (earlier, change) in enumerate(EARLIER[name]):
            runs = [data.run(earlier, "imf", seed) for seed in data.seeds(earlier)]
            per_seed = "; ".join(f"seed {r['seed']}: {coverage_success(r)}" for r in runs)
            samples = ", ".join(f"{r['samples'] / 1e6:.2f}M" for r in runs)
            when = "before the last change" if i == 0 else "before that"
            lines.append(f"  At its settings {when} ({change}; {earlier}.json): {per_seed} "
                         f"({samples} training samples). Other runs, "
                         "not a paired test: nothing was chosen by these numbers.")
    return lines


def readme_presets(data: Data) -> list[str]:
    """The README's line per shipped preset: its holdout at its current settings, beside a reference."""
    ref = data["references"]["lerobot_diffusion_pusht"]
    lines = [f"What the shipped CPU presets reach (one checkpoint of each run, looked at once on 200 holdout "
             f"seeds: {scored_checkpoints(data)}; one torch thread, budget on the cpu clock; docs/learning.md):"]
    for name, record in SHIPPED.items():
        runs = [data.run(record, "imf", seed) for seed in data.seeds(record)]
        per_seed = ", ".join(f"seed {r['seed']} {r['holdout_score']:.3f} coverage / {pct(r['holdout_success'])} "
                             f"success ({r['samples'] / 1e6:.2f}M samples)" for r in runs)
        lines.append(f"- `{name}` ({INPUTS[name].split(',')[0]}, {runs[0]['budget_s'] / 60:.0f} CPU-minutes): "
                     f"{per_seed}.")
    lines.append(f"- For scale: {ref['what']}: {ref['coverage']:.3f} coverage and "
                 f"{pct(ref['success'])} success after {ref['samples'] / 1e6:.1f}M training samples.")
    return lines


def target_line(data: Data, name: str, record: str) -> str:
    coverage, success = TARGETS[name]
    runs = [data.run(record, "imf", seed) for seed in data.seeds(record)]
    met = [r for r in runs if r["holdout_score"] >= coverage and r["holdout_success"] >= success]
    reached = ("reached" if len(met) == len(runs) else "not reached" if not met else
               f"reached at seed {', '.join(str(r['seed']) for r in met)} only")
    return (f"Issue #47's target for it, {coverage:.2f} coverage and {pct(success)} success on the holdout at every "
            f"training seed within its {runs[0]['budget_s'] / 60:.0f} CPU-minutes: {reached}.")


def anchors_line(data: Data) -> str:
    a = data["anchors"]
    return (f"Anchors on the same 200 holdout seeds (benchmarks/learning/anchors.py): holding still "
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


def selection_gaps(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str, str]:
    """``a`` minus ``b`` on the selection seeds: the coverage gap, the success gap, and which of
    them is beyond noise."""
    cov, cov_clear = gap(a, b, "score", seeds="selection")
    suc, suc_clear = gap(a, b, "success", points=True, seeds="selection")
    beyond = [what for what, clear in (("coverage", cov_clear), ("success", suc_clear)) if clear]
    return cov, suc, f"beyond noise on {' and '.join(beyond)}" if beyond else "within noise on both"


def seed_pairs(data: Data, name: str, other: str) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(seed, ``name``'s imf run, ``other``'s) for each training seed the two records share."""
    pairs = [(seed, data.run(name, "imf", seed), data.run(other, "imf", seed))
             for seed in sorted(set(data.seeds(name)) & set(data.seeds(other)))]
    if not pairs:
        raise ClaimError(f"{data.folder}: {name}.json and {other}.json share no training seed")
    return pairs


def budget_line(data: Data) -> str:
    """The image preset's budget choice, made before its tangent changed."""
    return ("- The image preset's budget (with the boundary tangent, the default then) "
            + budget_choice(data, "image_preset", "image_preset30").removeprefix("- Its budget "))


def budget_choice(data: Data, name: str, other: str) -> str:
    """How the image preset's budget was chosen: ``name``'s runs against ``other``'s (the same
    settings at another budget) on the selection seeds, per training seed."""
    pairs = seed_pairs(data, name, other)
    parts = []
    for seed, a, b in pairs:
        cov, suc, _ = selection_gaps(a, b)
        parts.append(f"seed {seed}: coverage {cov}, success {suc}")
    first, ref = pairs[0][1], pairs[0][2]
    shipped = preset(data, first["preset"])["training"]["time_budget_s"] / 60
    return (f"- Its budget was chosen on the selection seeds ({first['selection_episodes']} episodes each, "
            f"not the holdout): {first['budget_s'] / 60:.0f} CPU-minutes minus {ref['budget_s'] / 60:.0f}, per "
            f"training seed: {'; '.join(parts)}. The preset ships {shipped:.0f}.")


def holdout_before_choices(data: Data, shipped: dict[str, str]) -> str:
    """What the holdout had shown when each shipped CPU preset was last changed, from the holdout
    ledger (benchmarks/learning/holdout_ledger.py); ``shipped``: preset -> the JSON of its own runs."""
    ledger = holdout_ledger.load_from(data.folder)
    parts = []
    for name, own in shipped.items():
        changes = [c for c in ledger["choices"] if c["preset"] == name]
        if not changes:
            raise ClaimError(f"{data.folder / holdout_ledger.LEDGER}: no choice of {name}")
        last = max(changes, key=lambda c: c["date"])
        before = holdout_ledger.looks_before(ledger, last, data.folder)
        when = f"`{name}`'s last change ({last['commit']}, {last['date'][:10]})"
        if not before:
            parts.append(f"{when} came before any holdout look at its imf runs")
            continue
        best = sum(1 for e in before if e["checkpoint"] in ("best.pt", "latest.pt"))
        runs = {e["run"] for e in before}
        mine = {holdout_ledger.run_key(r) for r in data[own] if r.get("objective") == "imf"} & runs
        parts.append(f"{when} was committed after {len(before)} holdout looks at {len(runs)} imf runs of it "
                     f"({best} final checkpoints, {len(before) - best} curve snapshots"
                     + (f"; its own {len(mine)} runs among them" if mine else "") + ")")
    return ("The presets' settings were chosen on the test and selection seeds, never by a holdout score, "
            "but not always before the holdout was seen (the holdout ledger, "
            f"benchmarks/learning_results/{holdout_ledger.LEDGER}): " + "; ".join(parts) + ". Where looks came "
            "first, the preset's holdout numbers are those of a version picked after they were seen, not an "
            "untouched estimate.")


def readme_learning(data: Data) -> list[str]:
    ref = data["references"]["lerobot_diffusion_pusht"]
    names = ("keypoints", "keypoints_preset", "image", "image_preset", "image_preset30", *SHIPPED.values())
    most = max(r["samples"] for name in names for r in data[name] if r.get("objective") == "imf")
    episodes = {preset(data, data.run(n, "imf", data.seeds(n)[0])["preset"])["data"]["demo_episodes"] for n in names}
    return [
        "Every number here is one checkpoint of a run scored on 200 **holdout** seeds (900000.., "
        "imf/config/eval_seeds.py): its best checkpoint (chosen on the 50 test seeds), but the shipped presets' "
        f"own as each scores ({scored_checkpoints(data)}). "
        + holdout_before_choices(data, SHIPPED) + " "
        + anchors_line(data),
        "",
        f"Data: {' and '.join(map(str, sorted(episodes)))} scripted demonstrations (imf's expert, made on the machine). One torch thread a "
        "run, its budget on the cpu clock, on a 2-core machine shared with other work "
        "(benchmarks/learning/learning.py; JSON in benchmarks/learning_results/). A CPU-minute is that machine's: "
        "the training samples beside each result, and the samples figure below, are what carry to "
        "another (benchmarks/RESULTS.md, \"The image preset against its target, and what limits it\").",
        "",
        *shipped_lines(data),
        budget_line(data),
        EQUAL_COMPUTE_AT,
        *equal_compute(data, "keypoints"),
        *equal_compute(data, "image"),
        f"- For scale, other data and compute: {ref['what']}: {ref['coverage']:.3f} "
        f"coverage and {pct(ref['success'])} success over {ref['episodes']} episodes after "
        f"{ref['samples'] / 1e6:.1f}M training samples ({ref['steps'] // 1000}k steps of {ref['batch_size']}), "
        f"trained on {ref['data']}. imf's runs above saw {100 * most / ref['samples']:.0f}% of those samples "
        f"at most ({most / 1e6:.2f}M), on a CPU.",
    ]


def results_presets_answer(data: Data) -> list[str]:
    """RESULTS' answer to "does imf learn PushT?": the shipped presets on the holdout, and how the
    image preset's budget was chosen."""
    return [
        f"Each shipped CPU preset's runs, once on 200 holdout seeds (900000..), at the checkpoint it scores "
        f"({scored_checkpoints(data)}). " + anchors_line(data),
        "",
        *shipped_lines(data),
        budget_line(data),
    ]


def presets_made_by(data: Data) -> list[str]:
    """How each shipped preset's record was made, and where its JSON, runs and curves are: the
    holdout ledger's command for the record (``holdout_ledger.BEST``), so the paragraph follows
    ``SHIPPED`` and cannot name a record the preset no longer ships."""
    lines = ["How the records above were made (each run's scored checkpoint looked at once on 200 holdout seeds):"]
    for name, record in SHIPPED.items():
        curves = f"docs/{curves_of(data, record)}"
        runs = [data.run(record, "imf", seed) for seed in data.seeds(record)]
        command = " then ".join(f"`{part}`" for part in holdout_ledger.BEST[record].split(", then "))
        earlier = ", ".join(f"{e}.json" for e, _ in EARLIER[name])
        lines.append(f"- `{name}`: {command} ({runs[0]['budget_s'] / 60:.0f} CPU-minutes a run). JSON: "
                     f"benchmarks/learning_results/{record}.json; at the settings before: {earlier}. Every run: "
                     f"RUNS.md, \"Learning, {OBS[name]} observations, {record}\" (and the sections of the records "
                     f"before); the curves: {curves}.")
    lines.append("- The image preset's budget: image_preset.json against image_preset30.json (the same settings at "
                 "30 CPU-minutes). The anchors: `python benchmarks/learning/anchors.py`, anchors.json.")
    return lines


def curves_of(data: Data, record: str) -> str:
    """The file name under docs/ of ``record``'s curves; ClaimError when the figure is not there."""
    name = run_record.figure_name(record)
    path = data.folder.parents[1] / "docs" / name
    if not path.is_file():
        raise ClaimError(f"{path}: the curves of {record} (learning.py --name {record}) are missing")
    return name


def learning_curves(data: Data) -> list[str]:
    """docs/learning.md's figures: the shipped presets' curves, then those of their settings before."""
    keypoints, image = SHIPPED["pusht_lowdim_cpu"], SHIPPED["pusht_image_cpu"]
    before = {name: ", ".join(f"[{change}]({curves_of(data, record)})" for record, change in EARLIER[name])
              for name in SHIPPED}
    return [f"![the keypoint preset's two training seeds]({curves_of(data, keypoints)})", "",
            f"The shipped image preset's two training seeds: [{curves_of(data, image)}]({curves_of(data, image)}).",
            f"At the presets' settings before: the keypoint preset at {before['pusht_lowdim_cpu']} (the last "
            f"beside ddpm and flow); the image preset at {before['pusht_image_cpu']}; from images at equal compute, "
            f"[the equal-compute runs]({curves_of(data, 'image')})."]
