"""Read sweeps, run folders and Diffusion Policy outputs into trial rows, curves and configs."""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imf.errors import ReportError
from imf.report.attempts import attempts_text
from imf.report.basis import batch_size, budget_fields
from imf.report.model import LAST_K, Curve, TrialRow
from imf.stats import standard_error
from imf.store import (CONFIG, ENSEMBLE, FINAL_EVAL, HYDRA_CONFIG, LOGS, SUMMARY, RunSummary, ScoreboardStore,
                       find_run_dirs, first_number, flatten, is_ensemble, is_epoch_row, is_run_dir, log_segments,
                       model_size, observed_status, read_json_object, read_log, read_looks, read_sweep_trials,
                       read_yaml_mapping, row_episode_scores, row_score, row_success, run_only, samples_trained)

WARM_START = "init_from"  # in a run's cell identity: the checkpoint it warm-started from (never filled in)
SEED_IN_ID = re.compile(r"-s(\d+)(?=-|$)")


@dataclass
class RunRead:
    row: TrialRow
    curve: Curve
    config: dict[str, Any] | None  # flattened, run-only settings left out; None: no config file


@dataclass
class Rollout:
    epoch: int | None  # as logged (0-based)
    score: float
    se: float | None  # from the episodes; None with fewer than two
    episodes: int
    success: float | None


def _counted(epoch: Any) -> int | None:
    """Reports count epochs from 1; logs.json.txt and summary.json keep the 0-based index."""
    return epoch + 1 if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def read_config(run_dir: Path) -> tuple[dict[str, Any] | None, int | None]:
    """(the run's flattened config without run-only settings, its training.seed)."""
    for path in (run_dir / CONFIG, run_dir / HYDRA_CONFIG):
        if path.is_file():
            flat = flatten(read_yaml_mapping(path))
            if flat:
                seed = flat.get("training.seed")
                seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
                return {k: v for k, v in flat.items() if not run_only(k)}, seed
    return None, None


def seed_from_id(trial_id: str) -> int | None:
    match = SEED_IN_ID.search(trial_id)
    return int(match.group(1)) if match else None


def rollouts_of(rows: list[dict[str, Any]]) -> list[Rollout]:
    result = []
    for row in rows:
        score = row_score(row)
        if score is None:
            continue
        episodes = row_episode_scores(row)
        se = standard_error(episodes) if len(episodes) >= 2 else None
        epoch = row.get("epoch") if isinstance(row.get("epoch"), int) else None
        result.append(Rollout(epoch, score, se, len(episodes), row_success(row)))
    return result


def _dp_status(rows: list[dict[str, Any]]) -> str:
    """"incomplete" when the last epoch has fewer log lines than the full ones, else "unknown":
    a Diffusion Policy log does not say whether its run ended as planned."""
    epochs = [r["epoch"] for r in rows if isinstance(r.get("epoch"), int)]
    if not epochs:
        return "unknown"
    counts = Counter(epochs)
    full = [count for epoch, count in counts.items() if epoch != epochs[-1]]
    return "incomplete" if full and counts[epochs[-1]] < max(full) else "unknown"


def _fill_scores(row: TrialRow, rollouts: list[Rollout], summary: dict[str, Any],
                 last_k: int) -> None:
    row.rollouts = len(rollouts)
    if rollouts:
        best = max(rollouts, key=lambda r: r.score)  # the first of equal maxima
        row.best_score, row.best_epoch = best.score, _counted(best.epoch)
        row.success_rate, row.best_se = best.success, best.se
        row.episodes = best.episodes or None
        tail = rollouts[-last_k:]
        row.last_k, row.last_k_n = sum(r.score for r in tail) / len(tail), len(tail)
        # The rollouts share their test seeds, so their errors are not independent: the mean
        # of their SEs (what perfect correlation gives) is the honest bound.
        if all(r.se is not None for r in tail):
            row.last_k_se = sum(r.se for r in tail) / len(tail)
    elif first_number(summary, ("best_score",)) is not None:
        row.best_score, row.best_epoch = float(summary["best_score"]), _counted(summary.get("best_epoch"))
        metric = summary.get("metric")  # a trainer program's metric with the SE its log gave (metric.se)
        row.best_se = first_number(metric, ("se",)) if isinstance(metric, dict) else None
    if row.success_rate is None:
        row.success_rate = first_number(summary, ("best_success_rate",))


def read_final_eval(run_dir: Path, notices: list[str]) -> tuple[float, float | None, int | None] | None:
    """(mean, se, episodes) of the selection-seed evaluation in final_eval.json, if there is one."""
    path = run_dir / FINAL_EVAL
    if not path.is_file():
        return None
    try:
        data = read_json_object(path)
    except ValueError as exc:
        notices.append(f"ignored {exc}")
        return None
    mean = first_number(data, ("mean",))
    if mean is None:
        notices.append(f"ignored {path}: no number under 'mean'")
        return None
    per_seed = data.get("per_seed") if isinstance(data.get("per_seed"), list) else []
    scores = [float(v) for v in per_seed if isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v)]
    se = first_number(data, ("se",))
    if se is None and len(scores) >= 2:
        se = standard_error(scores)
    episodes = data.get("episodes")
    episodes = episodes if isinstance(episodes, int) and not isinstance(episodes, bool) else len(scores) or None
    return mean, se, episodes


def read_holdout(row: TrialRow, run_dir: Path, notices: list[str]) -> None:
    """The latest look at the run's holdout, and how many looks there were (holdout.json); looks
    at snapshots are a curve's points (benchmarks/learning/samples_to_threshold.py), counted apart."""
    try:
        looks = read_looks(run_dir)
    except ValueError as exc:
        notices.append(f"ignored {exc}")
        return
    latest = looks.latest
    if latest is None:
        return
    row.holdout, row.holdout_se = float(latest["mean"]), first_number(latest, ("se",))
    row.holdout_success, row.holdout_episodes = first_number(latest, ("success_rate",)), int(latest["episodes"])
    row.holdout_looks, row.holdout_checkpoints = len(looks.looks) - len(looks.curve), len(looks.checkpoints)
    row.holdout_curve_looks = len(looks.curve)


def _read_summary(run_dir: Path, notices: list[str]) -> dict[str, Any] | None:
    if not (run_dir / SUMMARY).is_file():
        return None
    try:
        data = read_json_object(run_dir / SUMMARY)
    except ValueError as exc:
        notices.append(f"ignored {exc}")
        return None
    typed = RunSummary.from_dict(data).to_dict()  # a value of the wrong type reads as unset
    return {key: typed[key] for key in data if key in typed}


def _read_log_rows(run_dir: Path, trial_id: str, notices: list[str]) -> tuple[list[dict[str, Any]], int]:
    """The rows of the last segment of the log and how many times the log restarted."""
    if not (run_dir / LOGS).is_file():
        return [], 0
    log = read_log(run_dir / LOGS)
    if log.skipped:
        notices.append(f"skipped {log.skipped} unreadable line(s) in {run_dir / LOGS}")
    segments = log_segments(log.rows)
    if len(segments) > 1:
        earlier = sum(len(s) for s in segments[:-1])
        notices.append(f"{trial_id}: log restarted {len(segments) - 1} time(s) (global_step went "
                       f"back); using the last segment, {earlier} earlier line(s) left out")
    return segments[-1], len(segments) - 1


def read_run(run_dir: Path, trial_id: str, sweep: dict[str, dict[str, Any]],
             notices: list[str], last_k: int = LAST_K) -> RunRead:
    summary = _read_summary(run_dir, notices)
    _metric_notice((summary or {}).get("metric"), notices)
    trial_id = str((summary or {}).get("id") or trial_id)
    state = sweep.get(trial_id, {})
    rows, restarts = _read_log_rows(run_dir, trial_id, notices)
    dp = summary is None and ((run_dir / HYDRA_CONFIG).is_file()
                              or any("test/mean_score" in r for r in rows))
    status = (summary or {}).get("status") or state.get("status")
    status = status or (_dp_status(rows) if dp else "unknown")
    if summary is not None and not _remote_and_live(state):
        status = observed_status(str(status), run_dir)  # never "running" for a process that is gone
    config, seed = read_config(run_dir)
    if config is not None and (summary or {}).get("init_from"):  # a warm start is its own cell
        config[WARM_START] = summary.get("init_hash") or str(Path(summary["init_from"]).resolve())
    if config is None:
        notices.extend(f"ignored {path}: not a YAML mapping of settings; its cell is taken from "
                       "the trial id" for path in (run_dir / CONFIG, run_dir / HYDRA_CONFIG)
                       if path.is_file())
    row = TrialRow(id=trial_id, run_dir=str(run_dir.resolve()), status=str(status),
                   source="diffusion_policy" if dp else "imf", queue=state.get("queue"),
                   note=str((summary or {}).get("note") or ""), restarts=restarts,
                   reason=str((summary or {}).get("reason") or "") if status == "failed" else "")
    row.metric = _metric_label((summary or {}).get("metric"))
    row.n_emb, row.n_layer = model_size(run_dir, summary, trial_id)
    row.attempts, row.attempt_log = attempts_text(state)
    row.seed = seed if seed is not None else _summary_seed(summary, trial_id)
    rollouts = rollouts_of(rows)
    _fill_scores(row, rollouts, summary or {}, last_k)
    epochs = [r["epoch"] for r in rows if is_epoch_row(r)]  # not a diverged epoch's marker
    row.final_epoch = _counted(max(epochs)) if epochs else (summary or {}).get("epochs_done")
    progress = _progress(rows, batch_size(config))
    row.budget_kind, row.budget_value, row.budget_clock = budget_fields(config)
    if progress:
        _, row.steps, row.samples, minutes = progress[-1]
        row.train_s = None if minutes is None else minutes * 60
    selection = read_final_eval(run_dir, notices)
    if selection:
        row.selection, row.selection_se, row.selection_episodes = selection
        row.selection_success = first_number(read_json_object(run_dir / FINAL_EVAL), ("success_rate",))
    read_holdout(row, run_dir, notices)
    return RunRead(row, _curve(trial_id, rollouts, rows, progress), config)


def _metric_label(metric: Any) -> str | None:
    """A trainer's metric as imf scores it: ``-val_mse`` for goal minimize, ``reward`` for maximize."""
    if not isinstance(metric, dict) or metric.get("goal") not in ("minimize", "maximize"):
        return None
    return f"{'-' if metric['goal'] == 'minimize' else ''}{metric.get('name')}"


def _metric_notice(metric: Any, notices: list[str]) -> None:
    """A trainer's metric (docs/trainers.md) is ranked as a higher-is-better score: say how, once."""
    label = _metric_label(metric)
    if label is None:
        return
    name = metric.get("name")
    notice = (f"score = {label} (the trainer's metric, goal {metric['goal']}): imf's higher-is-better score in "
              f"report.json, report.csv, the scoreboard, suggest and imf loop; summary.json keeps {name} as written")
    if notice not in notices:
        notices.append(notice)


def _remote_and_live(state: dict[str, Any]) -> bool:
    """The sweep runs the trial on a remote host (its handle names one): its files at home are
    copies (a latest.pt kept for a resume elsewhere), its lock is there, the sweep's word holds."""
    handle = state.get("handle") if isinstance(state.get("handle"), dict) else {}
    return state.get("status") in ("starting", "queued", "running") and bool(handle.get("host"))


def _curve(trial_id: str, rollouts: list[Rollout], rows: list[dict[str, Any]],
           progress: list[list[Any]]) -> Curve:
    """Score per rollout, val and train loss and mse per epoch, epochs counted from 1."""
    return Curve(trial_id, None, [[_counted(r.epoch), r.score, r.se] for r in rollouts],
                 _losses(rows, "val_loss"), progress, _losses(rows, "train_loss"),
                 _losses(rows, "train_mse"), _losses(rows, "val_mse"))


def _losses(rows: list[dict[str, Any]], key: str) -> list[list[float]]:
    return [[_counted(r["epoch"]), first_number(r, (key,))] for r in rows
            if isinstance(r.get("epoch"), int) and first_number(r, (key,)) is not None]


def _progress(rows: list[dict[str, Any]], batch: int | None) -> list[list[Any]]:
    """[epoch (from 1), steps, samples, training minutes] per logged epoch with a step count."""
    out = []
    for r in rows:
        step = r.get("global_step")
        if not isinstance(r.get("epoch"), int) or not isinstance(step, int) or isinstance(step, bool):
            continue
        seconds = first_number(r, ("train_s",))
        out.append([_counted(r["epoch"]), step, samples_trained(r, batch),
                    None if seconds is None else seconds / 60])
    return out


def _summary_seed(summary: dict[str, Any] | None, trial_id: str) -> int | None:
    seed = (summary or {}).get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else seed_from_id(trial_id)


def _from_ensemble(record: dict[str, Any]) -> RunRead:
    """An ``imf ensemble`` entry: its one score is the selection-seed mean (no max over rollouts,
    so no place in the ranking by max); it has no seed, cell or curve."""
    config = record.get("config") if isinstance(record.get("config"), dict) else {}
    score, se = first_number(record, ("score",)), first_number(record, ("se",))
    episodes = record.get("episodes") if isinstance(record.get("episodes"), int) else None
    members = [f"{m.get('trial')}@{m.get('epoch')}" for m in record.get("members") or []
               if isinstance(m, dict)]
    row = TrialRow(id=record["id"], run_dir=None, source=ENSEMBLE, status=ENSEMBLE,
                   n_emb=config.get("n_emb"), n_layer=config.get("n_layer"),
                   episodes=episodes, selection=score, selection_se=se, selection_episodes=episodes,
                   selection_success=first_number(record, ("success_rate",)),
                   note=str(record.get("note") or ""), members=members)
    return RunRead(row, Curve(row.id, None), None)


def _from_scoreboard(record: dict[str, Any], sweep: dict[str, dict[str, Any]]) -> RunRead:
    if is_ensemble(record):
        return _from_ensemble(record)
    config = record.get("config") if isinstance(record.get("config"), dict) else {}
    row = TrialRow(id=record["id"], run_dir=record.get("run_dir"), source="scoreboard",
                   status=str(record.get("status") or "unknown"),
                   n_emb=config.get("n_emb"), n_layer=config.get("n_layer"),
                   final_epoch=record.get("epochs"), best_score=first_number(record, ("score",)),
                   queue=sweep.get(record["id"], {}).get("queue"), note=record.get("note") or "",
                   seed=seed_from_id(record["id"]))
    return RunRead(row, Curve(row.id, None), None)


def _planned(trial_id: str, state: dict[str, Any], sweep_dir: Path) -> RunRead:
    row = TrialRow(id=trial_id, run_dir=None, source="imf", queue=state.get("queue"),
                   status=str(state.get("status") or "unknown"), seed=seed_from_id(trial_id))
    row.n_emb, row.n_layer = model_size(sweep_dir / trial_id, state, trial_id)
    return RunRead(row, Curve(trial_id, None), None)


def _sweep_state(folder: Path, notices: list[str]) -> dict[str, dict[str, Any]]:
    try:
        return read_sweep_trials(folder)
    except ValueError as exc:
        notices.append(f"ignored {exc}")
        return {}


def read_sweep(sweep_dir: Path, notices: list[str], last_k: int = LAST_K) -> list[RunRead]:
    sweep = _sweep_state(sweep_dir, notices)
    runs = [read_run(d, d.relative_to(sweep_dir).as_posix(), sweep, notices, last_k)
            for d in find_run_dirs(sweep_dir)]
    seen = {r.row.id for r in runs}
    for record in ScoreboardStore(sweep_dir).read():
        if record["id"] not in seen:  # recorded, but its folder is not here
            runs.append(_from_scoreboard(record, sweep))
            seen.add(record["id"])
    for trial_id, state in sweep.items():
        if trial_id not in seen:  # planned or queued, no folder yet
            runs.append(_planned(trial_id, state, sweep_dir))
    return runs


def check_folder(path: Path) -> None:
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise ReportError(f"{path} {what}; give a sweep folder or run folders")


def collect(paths: list[Path], notices: list[str], last_k: int = LAST_K) -> list[RunRead]:
    """Every trial under ``paths`` (sweep folders, run folders, Diffusion Policy outputs), each
    run folder once when the paths overlap (a sweep and a run in it, say)."""
    runs: dict[Any, RunRead] = {}
    noted: list[str] = []
    total = 0
    for path in map(Path, paths):
        check_folder(path)
        if is_run_dir(path):
            found = [read_run(path, path.name, _sweep_state(path.parent, noted), noted, last_k)]
        else:
            found = read_sweep(path, noted, last_k)
        if not found:
            raise ReportError(f"no run folders in {path} (a run folder holds {LOGS}, {SUMMARY} "
                              f"or {HYDRA_CONFIG.as_posix()})")
        total += len(found)
        for run in found:  # a trial without a folder is one of this path's
            runs.setdefault(run.row.run_dir or (path.resolve(), run.row.id), run)
    fill_added_settings([r.config for r in runs.values() if r.config is not None])
    notices.extend(dict.fromkeys(noted))  # a folder read twice: its notes once
    if len(runs) < total:
        notices.append(f"{total - len(runs)} trial(s) under more than one of the given folders "
                       "were counted once")
    return list(runs.values())


def fill_added_settings(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """A setting only some configs have, where all that have it agree on its value, is a
    setting a newer imf writes (its default) that older run folders lack: it is filled into
    the others, so the runs of one setup share a cell. Returns the settings filled."""
    added = {}
    for key in sorted({k for c in configs for k in c} - {WARM_START}):
        having = [c[key] for c in configs if key in c]
        if len(having) < len(configs) and len({config_key({"v": v}) for v in having}) == 1:
            added[key] = having[0]
            for config in configs:
                config.setdefault(key, having[0])
    return added


def config_key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=str)
