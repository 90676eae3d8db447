"""The holdout ledger: every look at the holdout seeds (900000..) behind a published number, and
every choice of a preset's settings with the looks that came before it
(benchmarks/learning_results/holdout_ledger.json).

    python benchmarks/learning/holdout_ledger.py --rebuild   # the ledger, from the git history of the result JSON
    python benchmarks/learning/holdout_ledger.py --write     # every record's holdout_looks, counted in the ledger
    python benchmarks/learning/holdout_ledger.py --check     # exit 1 where a record's holdout_looks disagrees

A look is one checkpoint scored on holdout seeds: a run's final checkpoint, best.pt or latest.pt
(a record's ``holdout_*`` fields and ``holdout_checkpoint`` in keypoints.json, image_preset.json,
...), one snapshot of a run's holdout curve (samples_to_threshold.json), a sweep's best trial
(attention.json) or an anchor policy (anchors.json). One run may be published in several files
(keypoints.json's imf runs are also data_scaling.json's 500-demonstration runs): a look belongs
to the run, keyed by its observations, objective, training seed and training samples, and counts
once. A number that
changed in a record's history is a second look. Its date is the first commit that published it:
the run folders (each look's holdout.json, with its time and checkpoint) were not kept, so the
checkpoint's sha256 is unknown (null) for every look made before this ledger.

A script that publishes a new holdout number (learning.py, data_scaling.py, curricula.py,
samples_to_threshold.py, attention.py look, anchors.py) is followed by ``--rebuild`` (the new look
dated "uncommitted" until its commit is in the history; rebuild again after committing) and
``--write``; tests/test_holdout_ledger.py fails while a published number has no look here.

A choice is a commit that changed a shipped CPU preset's settings (its YAML, comments aside, or a
default it takes: ``DEFAULT_CHANGES``); the ledger counts the holdout looks at imf runs of that
preset published before it. Looks counts in the result JSON are written from the ledger
(``--write``), never by hand; ``claims.py --check`` runs ``--check``.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path("benchmarks") / "learning_results"
LEDGER = "holdout_ledger.json"
HOLDOUT_START = 900_000
# The files whose records hold a run's best.pt look, and the command that made it.
BEST = {"keypoints": "python benchmarks/learning/learning.py --obs keypoints",
        "keypoints30": "python benchmarks/learning/learning.py --obs keypoints --name keypoints30",
        "image_twostep": "python benchmarks/learning/learning.py --obs image --name image_twostep",
        "image_preset30": "python benchmarks/learning/learning.py --obs image --name image_preset30",
        "image_preset": "python benchmarks/learning/learning.py --obs image --name image_preset",
        "keypoints_preset": "python benchmarks/learning/learning.py --obs keypoints --name keypoints_preset",
        "keypoints_preset64": "python benchmarks/learning/learning.py --obs keypoints --name keypoints_preset64",
        "keypoints_preset_lr4e3": "python benchmarks/learning/learning.py --obs keypoints --name keypoints_preset_lr4e3",
        "keypoints_preset_2step": "python benchmarks/learning/learning.py --obs keypoints --name keypoints_preset_2step "
                                  "--runs imf:2:42,imf:2:43",
        "keypoints_preset_h16": "python benchmarks/learning/learning.py --obs keypoints --runs imf:2:42,imf:2:43 "
                                "--set policy.horizon=16 --no-look, then --collect --name keypoints_preset_h16",
        "keypoints_preset_latest": "python benchmarks/learning/learning.py --obs keypoints --runs imf:2:42,imf:2:43 "
                                   "--no-look --name keypoints_direct16_shipped, then --collect --final-checkpoint "
                                   "latest --name keypoints_preset_latest",
        "image_preset_vhead": "python benchmarks/learning/learning.py --obs image --name image_preset_vhead",
        "image_preset_2step": "python benchmarks/learning/learning.py --obs image --runs imf:2:42,imf:2:43 --no-look, "
                              "then --collect --name image_preset_2step",
        "image_preset_h16": "python benchmarks/learning/learning.py --obs image --runs imf:2:42,imf:2:43 "
                            "--set policy.horizon=16 --no-look, then --collect --name image_preset_h16",
        "image_preset_k14": "python benchmarks/learning/learning.py --obs image --runs imf:2:42,imf:2:43 --no-look, "
                            "then --collect --name image_preset_k14",
        "image_preset_latest": "python benchmarks/learning/learning.py --obs image --runs imf:2:42,imf:2:43 --no-look "
                               "--name image_direct_latest, then --collect --final-checkpoint latest --name "
                               "image_preset_latest",
        "image": "python benchmarks/learning/learning.py --obs image --samples 2.34e6 (ddpm, flow); --with image_preset",
        "data_scaling": "python benchmarks/learning/data_scaling.py",
        "curricula": "python benchmarks/learning/curricula.py"}
# The files whose records carry a holdout_looks count to keep equal to the ledger's.
COUNTED = (*BEST, "ablations_image", "ablations_image60", "ablations_image_samples", "ablations_image_schedule",
           "ablations_image_width32", "ablations_keypoints15", "ablations_keypoints_samples",
           "action_horizon_image", "action_horizon_keypoints", "sampling_steps_keypoints", "sampling_steps_image",
           "checkpoint_choice_keypoints", "checkpoint_choice_image",
           "keypoints_direct13_shipped", "keypoints_preset_ema", "keypoints_direct16_shipped",
           "image_direct_latest", "keypoints_preset_e96", "keypoints_preset_e128", "keypoints_direct18_shipped",
           "keypoints_preset_h24", "keypoints_preset_obs3",  # learning.py --no-look records
           "noise_scale_keypoints", "image_preset_lr3e3", "keypoints_pace2", "keypoints_depth3", "image_preset_ema995",
           "image_preset_bs32", "keypoints_compile", "image_preset_early32", "image_direct_day2")
PRESETS = ("pusht_lowdim_cpu", "pusht_image_cpu")
# Commits that changed the shipped presets' settings outside their YAML, through a default every
# preset takes: (commit, presets, what changed). A YAML diff cannot see these, so they are named.
DEFAULT_CHANGES = (("660380f", PRESETS, "objective.options.tangent defaults to v_head (was boundary): "
                    "the imf objective's default, which every shipped preset takes"),)


def run_key(record: dict[str, Any]) -> str:
    """The run a record describes: observations, objective, training seed, training samples."""
    obs = record.get("obs") or ("image" if "image" in str(record.get("preset", "")) else "keypoints")
    return f"{obs}/{record.get('objective', 'imf')}/seed {record['seed']}/{record['samples']} samples"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def _history(root: Path, name: str) -> list[tuple[str, str, Any]]:
    """(short commit, date, parsed JSON) of every committed version of a result file, oldest
    first, then the working tree's where it differs from the last commit."""
    path = (RESULTS / name).as_posix()
    versions = []
    for line in _git(root, "log", "--reverse", "--format=%h %aI", "--", path).splitlines():
        commit, date = line.split()
        try:
            versions.append((commit, date, json.loads(_git(root, "show", f"{commit}:{path}"))))
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            continue  # a deleting commit, or a version that was not JSON
    here = root / path
    if here.is_file() and (not versions or json.loads(here.read_text()) != versions[-1][2]):
        versions.append(("uncommitted", "", json.loads(here.read_text())))
    return versions


def _records(root: Path) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for name in COUNTED:
        path = root / RESULTS / f"{name}.json"
        if path.is_file():
            out[name] = json.loads(path.read_text())
    return out


def _label_id(label: str) -> str:
    found = re.search(r"\(([^()]+)\)\s*$", label)
    return found.group(1) if found else label


def _curve_key(curve: dict[str, Any], records: dict[str, list[dict[str, Any]]]) -> str:
    """The run of a holdout curve: the record of the same run (its id or name in the curve's label,
    the same observations, objective, seed and budget) whose samples its last snapshot is nearest
    (one id names runs of several files: image_twostep's and image_preset's imf-1-s42)."""
    wanted, last = _label_id(curve.get("label", "")), max((p["samples"] for p in curve.get("points", [])), default=0)
    found = [r for rows in records.values() for r in rows
             if wanted in (r.get("id"), r.get("name")) and r.get("seed") == curve.get("seed") and "samples" in r
             and r.get("objective", "imf") == curve.get("objective") and r.get("budget_s") == curve.get("budget_s")]
    if not found:
        return f"run folder {curve['run']}"
    return run_key(min(found, key=lambda r: abs(r["samples"] - last)))


def rebuild(root: Path) -> dict[str, Any]:
    """The ledger from the git history of the committed result JSON (see the module's text)."""
    records = _records(root)
    looks: dict[tuple, dict[str, Any]] = {}

    def add(identity: tuple, entry: dict[str, Any], commit: str, date: str) -> None:
        if identity not in looks:
            looks[identity] = {**entry, "published": {"commit": commit, "date": date}}

    for name, command in BEST.items():
        for commit, date, rows in _history(root, f"{name}.json"):
            for r in rows if isinstance(rows, list) else []:
                if r.get("holdout_score") is None or "samples" not in r:
                    continue
                key, checkpoint = run_key(r), Path(r.get("holdout_checkpoint") or "best.pt").name
                add((key, checkpoint, round(r["holdout_score"], 6)), {
                    "run": key, "checkpoint": checkpoint, "episodes": r.get("holdout_episodes", 200),
                    "coverage": r["holdout_score"], "success": r.get("holdout_success"), "command": command}, commit, date)
    for commit, date, data in _history(root, "samples_to_threshold.json"):
        for curve in data.get("curves", []):
            key = _curve_key(curve, records)
            for point in curve.get("points", []):
                add((key, point["checkpoint"], round(point["coverage"], 6)), {
                    "run": key, "run_folder": curve["run"], "checkpoint": point["checkpoint"],
                    "episodes": curve.get("episodes"), "coverage": point["coverage"], "success": point.get("success"),
                    "command": "python benchmarks/learning/samples_to_threshold.py RUN_DIR ..."}, commit, date)
    for commit, date, data in _history(root, "attention.json"):
        for r in data.get("holdout", []) if isinstance(data, dict) else []:
            key = f"attention sweep trial {r['id']}"
            add((key, "best.pt", round(r["holdout"], 6)), {
                "run": key, "checkpoint": "best.pt", "episodes": r.get("holdout_episodes"), "coverage": r["holdout"],
                "success": r.get("holdout_success"), "command": "python benchmarks/learning/attention.py look"}, commit, date)
    for commit, date, data in _history(root, "anchors.json"):
        for policy, scores in (data.items() if isinstance(data, dict) else []):
            if "holdout" in scores:
                key = f"anchor {policy}"
                add((key, "policy", round(scores["holdout"]["mean"], 6)), {
                    "run": key, "checkpoint": "none (a scripted policy)", "episodes": scores["holdout"]["episodes"],
                    "coverage": scores["holdout"]["mean"], "success": scores["holdout"].get("success_rate"),
                    "command": "python benchmarks/learning/anchors.py"}, commit, date)
    entries = []
    for entry in looks.values():
        entry.setdefault("run_folder", None)
        entry.update(checkpoint_sha256=None, seeds=f"{HOLDOUT_START}..{HOLDOUT_START + entry['episodes'] - 1}",
                     chose=None, records=_published_in(entry["run"], records))
        entries.append(entry)
    entries.sort(key=lambda e: (e["published"]["date"] or "~", e["run"], e["checkpoint"]))
    return {"about": __doc__.split("\n\n")[0].replace("\n", " "),
            "reconstructed": "from the git history of benchmarks/learning_results/*.json; checkpoint_sha256 is "
                             "null where the run folder was not kept",
            "looks": entries, "choices": choices(root)}


def record_label(name: str, row: dict[str, Any]) -> str:
    """``NAME.json: ROW``: a run record by its id, an ablation row by its name, a rescoring row
    (action_horizon.py, sampling_steps.py: one row per setting of one run) by its run folder."""
    return f"{name}.json: {row.get('id') or row.get('name') or row.get('run')}"


def _published_in(key: str, records: dict[str, list[dict[str, Any]]]) -> list[str]:
    return sorted({record_label(name, r) for name, rows in records.items()
                   for r in rows if "samples" in r and run_key(r) == key})


def choices(root: Path) -> list[dict[str, Any]]:
    """Every commit that changed a shipped CPU preset's settings (comments aside)."""
    out = []
    for preset in PRESETS:
        path = f"imf/configs/{preset}.yaml"
        before = None
        for line in _git(root, "log", "--reverse", "--format=%h %aI %s", "--", path).splitlines():
            commit, date, subject = line.split(" ", 2)
            try:
                now = yaml.safe_load(_git(root, "show", f"{commit}:{path}"))
            except subprocess.CalledProcessError:
                continue
            if now != before:
                out.append({"preset": preset, "commit": commit, "date": date, "what": subject[:200]})
            before = now
    for commit, presets, what in DEFAULT_CHANGES:
        short, date = _git(root, "show", "-s", "--format=%h %aI", commit).split()
        out += [{"preset": preset, "commit": short, "date": date, "what": what} for preset in presets
                if not any(c["preset"] == preset and c["commit"] == short for c in out)]
    return sorted(out, key=lambda c: c["date"])


def load(root: Path = ROOT) -> dict[str, Any]:
    return load_from(root / RESULTS)


def load_from(folder: Path) -> dict[str, Any]:
    """The ledger in a results folder; an empty one where there is none (a test's folder)."""
    path = folder / LEDGER
    return json.loads(path.read_text()) if path.is_file() else {"looks": [], "choices": []}


def looks(ledger: dict[str, Any], key: str) -> int:
    """The holdout looks at one run (best.pt and snapshots), counted in the ledger."""
    return sum(1 for e in ledger["looks"] if e["run"] == key)


def looks_of(ledger: dict[str, Any], record: dict[str, Any]) -> int:
    """The looks at a record's run; 0 for a record that does not name its run (no seed or samples)."""
    return looks(ledger, run_key(record)) if "seed" in record and "samples" in record else 0


def looks_before(ledger: dict[str, Any], choice: dict[str, Any], folder: Path, objective: str = "imf") -> list[dict[str, Any]]:
    """The looks at ``objective``'s runs of the choice's preset published before the choice (the
    same commit included: the number was known when it was made); ``folder``: the result JSON."""
    presets = {}
    for name in COUNTED:
        path = folder / f"{name}.json"
        if path.is_file():
            presets.update({record_label(name, r): r.get("preset", "")
                            for r in json.loads(path.read_text())})
    return [e for e in ledger["looks"] if e["published"]["date"] and e["published"]["date"] <= choice["date"]
            and any(presets.get(r) == choice["preset"] for r in e["records"]) and f"/{objective}/" in e["run"]]


def _counted(root: Path) -> list[tuple[str, dict[str, Any], str]]:
    """(file, record, its run key) of every record that carries holdout_looks: an action-horizon
    row is a re-scored ablation run, found by its name among the ablation records."""
    out, records = [], _records(root)
    named = {r["name"]: run_key(r) for name, rows in records.items() if name.startswith("ablations_")
             for r in rows if "name" in r and "samples" in r}
    for name, rows in records.items():
        out += [(name, r, run_key(r) if "samples" in r else named.get(r.get("run"), f"run {r.get('run')}"))
                for r in rows if "holdout_looks" in r and ("samples" in r or "run" in r)]
    attention = root / RESULTS / "attention.json"
    if attention.is_file():
        out += [("attention", r, f"attention sweep trial {r['id']}") for r in json.loads(attention.read_text())["runs"]]
    return out


# overrides that say how a run was measured, budgeted or seeded: the run key holds the seed and samples
NOT_A_SETTING = ("training.time_budget_s=", "training.budget_clock=", "logging.", "training.snapshot_every=",
                 "training.num_epochs=", "training.seed=", "objective.name=")


def settings(record: dict[str, Any]) -> tuple[str, ...] | None:
    """What a record's run trained beyond its key: its preset and its other overrides (None where the
    record does not list them)."""
    if "overrides" not in record:
        return None
    return (record.get("preset", ""), *sorted(o for o in record["overrides"] if not o.startswith(NOT_A_SETTING)))


def collisions(ledger: dict[str, Any], records: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Run keys with looks that name records of different settings: the ledger cannot tell which run
    was looked at, so every record under the key would be credited with the looks."""
    by_key: dict[str, dict[tuple[str, ...], str]] = {}
    for name, rows in records.items():
        for r in rows:
            trained = settings(r) if "seed" in r and "samples" in r else None
            if trained is not None:
                by_key.setdefault(run_key(r), {}).setdefault(trained, record_label(name, r))
    return [f"{key}: {looks(ledger, key)} looks, but the key names runs of different settings ("
            + "; ".join(f"{label}: {' '.join(s[1:]) or 'the preset'} on {s[0]}" for s, label in sorted(found.items()))
            + "); give the runs different samples or seeds, or key the ledger by setting"
            for key, found in sorted(by_key.items()) if len(found) > 1 and looks(ledger, key)]


def check(root: Path = ROOT) -> list[str]:
    """Where a record's holdout_looks is not the ledger's count, the ledger names a record that is
    not there, or one looked-at run key names runs of different settings; one line each."""
    ledger, records = load(root), _records(root)
    problems = collisions(ledger, records)
    for name, record, key in _counted(root):
        want = looks(ledger, key)
        if record["holdout_looks"] != want:
            problems.append(f"{name}.json: {record.get('id') or record.get('name') or record.get('run')}: holdout_looks "
                            f"{record['holdout_looks']}, the ledger counts {want} ({key}); run "
                            f"`python benchmarks/learning/holdout_ledger.py --write`")
    for name, rows in records.items():
        for r in rows:
            if r.get("holdout_score") is not None and not looks(ledger, run_key(r)):
                problems.append(f"{name}.json: {r.get('id')}: a holdout score with no look in the ledger")
    return problems


def write(root: Path = ROOT) -> None:
    """Set every record's holdout_looks to the ledger's count, keeping each file's layout."""
    ledger = load(root)
    keys = {(name, json.dumps(r, sort_keys=True)): key for name, r, key in _counted(root)}
    for name in (*COUNTED, "attention"):
        path = root / RESULTS / f"{name}.json"
        if not path.is_file():
            continue
        text = path.read_text()
        data = json.loads(text)
        rows = data["runs"] if name == "attention" else data
        for r in rows:
            key = keys.get((name, json.dumps(r, sort_keys=True)))
            if key is not None:
                r["holdout_looks"] = looks(ledger, key)
        indent = len(text.splitlines()[1]) - len(text.splitlines()[1].lstrip(" ")) if "\n" in text else 1
        new = json.dumps(data, indent=indent, ensure_ascii="\\u" in text) + "\n"
        if new != text:
            path.write_text(new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--rebuild", action="store_true", help="write the ledger from the result JSON's git history")
    what.add_argument("--write", action="store_true", help="write every record's holdout_looks from the ledger")
    what.add_argument("--check", action="store_true", help="exit 1 where a record's holdout_looks disagrees")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    if args.rebuild:
        ledger = rebuild(args.root)
        (args.root / RESULTS / LEDGER).write_text(json.dumps(ledger, indent=1, ensure_ascii=False) + "\n")
        print(f"holdout_ledger.py: {len(ledger['looks'])} looks, {len(ledger['choices'])} choices")
    elif args.write:
        write(args.root)
        print("holdout_ledger.py: holdout_looks written from the ledger")
    else:
        problems = check(args.root)
        for line in problems:
            print(f"holdout_ledger.py: {line}", file=sys.stderr)
        if problems:
            sys.exit(1)
        print("holdout_ledger.py: every holdout_looks agrees with the ledger")


if __name__ == "__main__":
    main()
