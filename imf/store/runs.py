"""Read the plain files a run folder leaves: logs.json.txt, summary.json, configs.

Shared by the report and the sweep monitor. Readers are tolerant: a truncated or
garbled log line is skipped and counted, the reference's ``test/mean_score``
spelling is accepted, so Diffusion Policy run folders read like imf ones.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from imf.store.layout import ATTEMPTS, CONFIG, HYDRA_CONFIG, LOGS, SUMMARY, SWEEP_STATE

DP_OUTPUTS = Path("data") / "outputs"
DP_EPISODE_PREFIX = "test/sim_max_reward_"
NOT_RUN_FOLDERS = {"checkpoints", "wandb", "swanlog", "media", "__pycache__", "node_modules",
                   "site-packages", ATTEMPTS}  # attempts/N: a run's earlier attempts, not runs
SCORE_KEYS = ("test_mean_score", "test/mean_score")
SUCCESS_KEYS = ("test_success_rate", "test/success_rate")
# a trainer program's metric as imf's higher-is-better score, in the logs.json.txt rows imf writes
# for it (imf/train/metric_watch.py); "imf_score_se" its standard error, when the program gives one
PROGRAM_SCORE = "imf_score"
_SIZE_RE = re.compile(r"(?:^|[-_])e(?P<emb>\d+)-l(?P<layer>\d+)(?=$|[-_])")


@dataclass
class LogRead:
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0  # lines that were not a JSON object (a truncated last line, say)


def is_run_dir(path: Path) -> bool:
    """A run folder holds logs.json.txt (any run), summary.json (an imf run) or
    .hydra/config.yaml (a Diffusion Policy run, also before its first log line)."""
    return any((path / name).is_file() for name in (LOGS, SUMMARY, HYDRA_CONFIG))


def _searched(name: str, folder: Path) -> bool:
    """Folders that never hold runs: hidden ones, logger and checkpoint folders, zarr stores,
    virtual environments."""
    return not (name.startswith(".") or name in NOT_RUN_FOLDERS or name.endswith(".zarr")
                or (folder / name / "pyvenv.cfg").is_file())


def _walk_runs(start: Path, max_depth: int) -> list[Path]:
    found = []
    for folder, subdirs, _ in os.walk(start):
        here = Path(folder)
        depth = len(here.relative_to(start).parts)
        if depth and is_run_dir(here):
            found.append(here)
            subdirs.clear()
        elif depth >= max_depth:
            subdirs.clear()
        subdirs[:] = sorted(d for d in subdirs if _searched(d, here))
    return found


def find_run_dirs(root: Path, max_depth: int = 3) -> list[Path]:
    """Run folders under ``root`` (not inside other run folders), sorted by path.

    The depth follows the layout: up to ``max_depth`` levels below ``root`` (a sweep holds its
    trials one level down, a folder of sweeps two), and, at a Diffusion Policy repository root,
    up to ``max_depth`` levels below data/outputs (<date>/<time>_<name>/, multirun job folders
    one more).
    """
    found = set(_walk_runs(root, max_depth))
    if (root / DP_OUTPUTS).is_dir():
        found.update(_walk_runs(root / DP_OUTPUTS, max_depth))
    return sorted(found)


def log_segments(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Split a log where global_step goes back (training restarted into the same file)."""
    segments: list[list[dict[str, Any]]] = [[]]
    last_step = None
    for row in rows:
        step = row.get("global_step")
        if isinstance(step, int) and not isinstance(step, bool):
            if last_step is not None and step < last_step and segments[-1]:
                segments.append([])
            last_step = step
        segments[-1].append(row)
    return segments


def row_episode_scores(row: dict[str, Any]) -> list[float]:
    """Per-episode test scores of a rollout row: imf's ``test_per_seed`` object, or Diffusion
    Policy's ``test/sim_max_reward_<seed>`` keys; [] when the row has none."""
    per_seed = row.get("test_per_seed")
    if isinstance(per_seed, dict):
        values = list(per_seed.values())
    else:
        values = [v for k, v in row.items() if k.startswith(DP_EPISODE_PREFIX)]
    return [float(v) for v in values
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]


def read_log(path: Path) -> LogRead:
    """Every JSON object line of a logs.json.txt; other lines are skipped and counted."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return parse_log(handle)


def parse_log(lines: Iterable[str]) -> LogRead:
    """``read_log`` of lines already read (a chunk a sweep's poll brought home, say)."""
    result = LogRead()
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            result.skipped += 1
            continue
        if isinstance(row, dict):
            result.rows.append(row)
        else:
            result.skipped += 1
    return result


def is_epoch_row(row: dict[str, Any]) -> bool:
    """A finished epoch's line; not the marker a trial writes when an epoch diverged."""
    return isinstance(row.get("epoch"), int) and not row.get("diverged")


def samples_trained(row: dict[str, Any], batch: int | None) -> int | None:
    """The training samples a log row had reached: its own count (trials log it, an early batch
    makes it more than steps x batch_size), else its optimizer steps x ``batch``."""
    samples, step = row.get("samples"), row.get("global_step")
    if isinstance(samples, int) and not isinstance(samples, bool):
        return samples
    if isinstance(step, int) and not isinstance(step, bool) and batch:
        return step * batch
    return None


def first_number(row: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    """The first finite number under ``keys`` (bools are not numbers), else None."""
    for key in keys:
        value = row.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) if math.isfinite(value) else None
    return None


def row_score(row: dict[str, Any]) -> float | None:
    """The row's test mean score under either spelling, or None."""
    return first_number(row, SCORE_KEYS)


def row_success(row: dict[str, Any]) -> float | None:
    """The row's test success rate under either spelling, or None."""
    return first_number(row, SUCCESS_KEYS)


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ValueError (with the reason) when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is a JSON {type(data).__name__}, expected an object")
    return data


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML mapping from ``path``; an empty dict when missing or not a mapping."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def read_sweep_trials(sweep_dir: Path) -> dict[str, dict[str, Any]]:
    """Per-trial state from sweep.json by id, each with a "status" (from "status" or "state").

    ``trials`` may be a list of objects with an "id" or an object keyed by id; {} if absent.
    ValueError (with the reason) when sweep.json is not a JSON object.
    """
    path = sweep_dir / SWEEP_STATE
    if not path.is_file():
        return {}
    trials = read_json_object(path).get("trials")
    if isinstance(trials, list):
        trials = {t.get("id"): t for t in trials if isinstance(t, dict)}
    if not isinstance(trials, dict):
        return {}
    return {str(k): {**v, "status": v.get("status") or v.get("state")}
            for k, v in trials.items() if isinstance(v, dict)}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _size_from_policy(policy: Any) -> tuple[int | None, int | None]:
    if not isinstance(policy, dict):
        return None, None
    for section in (policy, policy.get("model")):
        if isinstance(section, dict) and _int(section.get("n_emb")) is not None:
            return _int(section.get("n_emb")), _int(section.get("n_layer"))
    return None, None


def model_size(run_dir: Path, summary: dict[str, Any] | None,
               trial_id: str) -> tuple[int | None, int | None]:
    """(n_emb, n_layer): summary params, config.yaml, DP's .hydra config, else the id."""
    params = (summary or {}).get("params")
    if isinstance(params, dict) and _int(params.get("n_emb")) is not None:
        return _int(params.get("n_emb")), _int(params.get("n_layer"))
    for config in (run_dir / CONFIG, run_dir / HYDRA_CONFIG):
        if config.is_file():
            size = _size_from_policy(read_yaml_mapping(config).get("policy"))
            if size[0] is not None:
                return size
    match = _SIZE_RE.search(trial_id)
    if match:
        return int(match["emb"]), int(match["layer"])
    return None, None
