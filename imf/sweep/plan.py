"""Planning a sweep: the grid's trials, their cost, and their order on each queue.

``--grid 128,256,384x6,12,18`` is n_emb x n_layer; ``--grid key=v1,v2`` works for any config
key; several grids multiply (cartesian product). Every trial's config is built and checked
before anything starts. The cost of a trial is proportional to epochs x (n_layer x n_emb^2 +
a fixed part for the image encoder, data and rollouts); trials go longest-first onto the queue
that would finish them first (LPT), then pairwise moves and swaps shorten the longest queue.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from imf.config import (ALIASES, MAX_TRAIN_CAP, Config, check_value, coerce_kind, is_config_key, key_kind,
                        load_config, mask_overrides, parse_scalar)
from imf.data import check_data_size
from imf.errors import ConfigError, SweepError
from imf.store import params_of, readable_id, trial_hash
from imf.registry import fill_options

FIXED_COST = 0.5  # per epoch, in units of n_layer * n_emb^2 / 1e6 (encoder, data, rollouts)
SHAPE_GRID = re.compile(r"^\s*(\d+(?:\s*,\s*\d+)*)\s*x\s*(\d+(?:\s*,\s*\d+)*)\s*$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")  # \Z: "$" would let a final newline in
SEED_KEYS = ("training.seed", "seed")
ID_KEYS = ("policy.n_emb", "policy.n_layer", "policy.mask", *SEED_KEYS)  # in every id already
GRID_HELP = ("expected N_EMB,..xN_LAYER,.. (e.g. 128,256,384x6,12,18) or key=v1,v2 "
             "(e.g. training.lr=1e-4,3e-4)")


@dataclass
class TrialPlan:
    id: str
    overrides: list[str]  # this trial's own dotted overrides (from the grid)
    seed: int
    epochs: int
    params: dict[str, Any]  # mask, n_emb, n_layer, n_head, objective and the grid's values
    cost: float
    config_hash: str | None = None  # imf.store.identity.trial_hash: checked against the project's records


@dataclass
class Plan:
    trials: list[TrialPlan]
    speeds: dict[str, float]  # queue name -> speed factor
    order: dict[str, list[str]] = field(default_factory=dict)  # queue name -> trial ids in order

    def finish(self) -> dict[str, float]:
        costs = {t.id: t.cost for t in self.trials}
        return {q: sum(costs[i] for i in ids) / self.speeds[q] for q, ids in self.order.items()}

    def lower_bound(self) -> float:
        costs = [t.cost for t in self.trials]
        fastest = max(self.speeds.values())
        return max(max(costs) / fastest, sum(costs) / sum(self.speeds.values())) if costs else 0.0


def parse_grids(grids: list[str]) -> list[tuple[str, list[str]]]:
    """``["128,256x6,12", "training.lr=1e-4,3e-4"]`` -> [(key, [raw values]), ...]."""
    axes: list[tuple[str, list[str]]] = []
    for grid in grids:
        shape = SHAPE_GRID.match(grid)
        if shape:
            axes.append(("policy.n_emb", _split(shape.group(1))))
            axes.append(("policy.n_layer", _split(shape.group(2))))
            continue
        key, sep, values = grid.partition("=")
        key = key.strip()
        if not sep or not key or not _split(values):
            raise SweepError(f"--grid '{grid}': {GRID_HELP}")
        key = "training.seed" if key == "seed" else ALIASES.get(key, key)
        if not is_config_key(key):
            raise SweepError(f"--grid '{grid}': unknown config key '{key}'; see `imf trial --help` "
                             f"or imf/config/schema.py for the keys")
        axes.append((key, _split(values)))
    seen = [k for k, _ in axes]
    for key in seen:
        if seen.count(key) > 1:
            raise SweepError(f"--grid: config key '{key}' is given by more than one grid")
    for grid, (key, values) in zip(_grid_of_axis(grids), axes):
        check_distinct(grid, key, values)
    return axes


def _grid_of_axis(grids: list[str]) -> list[str]:
    """The --grid word behind each axis parse_grids makes (a shape grid makes two)."""
    return [g for g in grids for _ in range(2 if SHAPE_GRID.match(g) else 1)]


def _as_config_value(raw: str, key: str) -> Any:
    """``raw`` as the config will hold it (the rules of imf/config/values.py); a value the config
    refuses is kept as written (building the trial's config says why)."""
    parsed = parse_scalar(raw)
    kind = key_kind(key)
    if kind is None:  # a plugin's option: its Options class coerces it later
        return parsed
    try:
        return coerce_kind(parsed, kind, key)
    except ConfigError:
        return raw


def check_distinct(grid: str, key: str, values: list[str]) -> None:
    """Two values of one axis that the config holds as one value (1e-4 and 0.0001, 64 and 64.0,
    true and yes) would be two trials of one config under two ids: refused."""
    seen: dict[Any, int] = {}
    for i, raw in enumerate(values):
        value = _as_config_value(raw, key)
        try:
            first = seen.setdefault(value, i)
        except TypeError:  # an unhashable value (a list): left to the trial's config
            continue
        if first != i:
            raise SweepError(f"--grid '{grid}': {values[first]} and {raw} are one value of {key} "
                             f"({value!r}); give each value once")


def check_one_value(overrides: list[str]) -> None:
    """A sweep's ``key=value`` words hold for every trial: a comma list for a number or a flag
    is an axis given in the wrong place, so say where it goes."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = ALIASES.get(key.strip(), key.strip())
        kind = key_kind(key)
        if sep and "," in raw and kind is not None and kind.base in (int, float, bool):
            raise SweepError(f"override '{item}' gives {key} several values, and an override holds "
                             f"for every trial; sweep it as an axis with --grid {key}={raw.strip()}")


def _split(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def parse_seeds(text: str) -> list[int]:
    """``"42,43,44"`` -> [42, 43, 44]: distinct integers >= 0 (``--seeds``)."""
    parts = [v.strip() for v in str(text).split(",")]
    if not all(re.fullmatch(r"\d+", v) for v in parts):
        raise SweepError(f"--seeds '{text}': expected comma-separated integers >= 0, e.g. 42,43,44")
    seeds = [int(v) for v in parts]
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise SweepError(f"--seeds '{text}': seed {twice[0]} is given twice; each seed once")
    return seeds


def _seed_axes(axes: list[tuple[str, list[str]]], seed: int | None, seeds: list[int] | None,
               overrides: list[str]) -> tuple[list[tuple[str, list[str]]], int | None]:
    """``--seeds`` as a training.seed axis (one seed: the same as ``--seed``)."""
    for value in ([seed] if seed is not None else []) + list(seeds or []):
        check_value("training.seed", value)  # --seed reaches the trial, not the planned config
    if not seeds:
        return axes, seed
    if seed is not None:
        raise SweepError("--seeds and --seed both given; use --seeds alone (one seed is --seeds N)")
    if any(key in SEED_KEYS for key, _ in axes):
        raise SweepError("--seeds and a training.seed grid both given; use one of the two")
    if any(o.partition("=")[0].strip() in SEED_KEYS for o in overrides):
        raise SweepError("--seeds and a training.seed override both given; use one of the two")
    if len(seeds) == 1:
        return axes, seeds[0]
    return axes + [("training.seed", [str(s) for s in seeds])], None


def trial_points(axes: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    keys = [k for k, _ in axes]
    return [dict(zip(keys, combo)) for combo in itertools.product(*(v for _, v in axes))]


def trial_id(name: str, cfg: Config, seed: int, point: dict[str, str]) -> str:
    """``<sweep>-`` + ``SIZED_ID`` (imf/store/identity.py) plus ``-<key><value>`` per other grid key."""
    extras = [(key, value) for key, value in point.items() if key not in ID_KEYS]
    return readable_id(name, seed, extras, params=params_of(cfg))


def cost_of(n_emb: int, n_layer: int, epochs: int) -> float:
    return epochs * (n_layer * n_emb ** 2 / 1e6 + FIXED_COST)


def _trial_config(config: str, overrides: list[str], checked: set[tuple[Any, ...]]) -> Config:
    """A trial's config, checked as far as its trial would check it before its run folder."""
    cfg = load_config(config, overrides)
    fill_options(cfg)  # a plugin's bad option fails here, before any trial starts
    sizes = (cfg.data.path, cfg.data.demo_episodes, cfg.data.val_ratio, cfg.data.max_train_episodes)
    if sizes not in checked:  # a store's episodes are read once, not once per trial
        check_data_size(cfg.data, MAX_TRAIN_CAP, only_local=True)
        checked.add(sizes)
    return cfg


def build_trials(name: str, config: str, grids: list[str], overrides: list[str], *,
                 mask: str | None = None, seed: int | None = None,
                 epochs: int | None = None, seeds: list[int] | None = None) -> list[TrialPlan]:
    """Every grid point as a checked trial (raises before anything starts); ``seeds`` (two or
    more) run every point once per seed, each seed its own trial."""
    if not NAME_RE.match(name):
        raise SweepError(f"--name {name!r}: use letters, digits, '.', '_' and '-' (a folder name)")
    check_one_value(overrides)
    base = list(overrides) + mask_overrides(mask)
    base += [f"training.num_epochs={epochs}"] if epochs is not None else []
    trials: list[TrialPlan] = []
    checked: set[tuple[Any, ...]] = set()
    axes, seed = _seed_axes(parse_grids(grids), seed, seeds, overrides)
    for point in trial_points(axes):
        own = [f"{k}={v}" for k, v in point.items() if k not in SEED_KEYS]
        cfg = _trial_config(config, base + own + [f"{k}={v}" for k, v in point.items() if k in SEED_KEYS],
                            checked)
        trial_seed = cfg.training.seed if seed is None or any(k in point for k in SEED_KEYS) else seed
        params = {**params_of(cfg), **point}
        epochs_n = cfg.training.num_epochs
        trials.append(TrialPlan(trial_id(name, cfg, trial_seed, point), own, trial_seed, epochs_n,
                                params, cost_of(cfg.policy.n_emb, cfg.policy.n_layer, epochs_n),
                                trial_hash(cfg.to_dict(), trial_seed, None)))
    seen: set[str] = set()
    for trial in trials:
        if trial.id in seen:
            raise SweepError(f"--grid: two grid points give the same trial id '{trial.id}'")
        seen.add(trial.id)
    return trials


def assign(costs: dict[str, float], speeds: dict[str, float],
           loads: dict[str, float] | None = None) -> dict[str, list[str]]:
    """Longest-first onto the queue finishing it first, then improve; each queue longest-first."""
    if not speeds:
        raise SweepError("no queue to plan onto")
    order: dict[str, list[str]] = {q: [] for q in speeds}
    finish = {q: (loads or {}).get(q, 0.0) for q in speeds}
    for tid in sorted(costs, key=lambda t: (-costs[t], t)):
        best = min(speeds, key=lambda q: (finish[q] + costs[tid] / speeds[q], list(speeds).index(q)))
        order[best].append(tid)
        finish[best] += costs[tid] / speeds[best]
    _improve(order, costs, speeds, finish)
    return {q: sorted(ids, key=lambda t: (-costs[t], t)) for q, ids in order.items()}


IMPROVE_MAX_TRIALS = 400  # beyond it LPT alone is within a small fraction of the bound


def _improve(order: dict[str, list[str]], costs: dict[str, float], speeds: dict[str, float],
             finish: dict[str, float], rounds: int = 200) -> None:
    """Move or swap one trial off the latest queue while that lowers the pair's later finish.
    A round looks at every pair of trials (quadratic), so only plans of up to
    IMPROVE_MAX_TRIALS are improved: with many trials LPT's gap to the lower bound is already
    small (each trial is a small part of a queue's load)."""
    if len(costs) > IMPROVE_MAX_TRIALS:
        return
    for _ in range(rounds):
        worst = max(finish, key=finish.get)
        best: tuple[float, str, str, str | None] | None = None
        for tid in order[worst]:
            for q in order:
                if q == worst:
                    continue
                for other in [None, *order[q]]:
                    delta = costs[tid] - (costs[other] if other else 0.0)
                    pair = max(finish[worst] - delta / speeds[worst], finish[q] + delta / speeds[q])
                    if pair < finish[worst] - 1e-9 and (best is None or pair < best[0]):
                        best = (pair, tid, q, other)
        if best is None:
            return
        _, tid, q, other = best
        delta = costs[tid] - (costs[other] if other else 0.0)
        order[worst].remove(tid)
        order[q].append(tid)
        if other:
            order[q].remove(other)
            order[worst].append(other)
        finish[worst] -= delta / speeds[worst]
        finish[q] += delta / speeds[q]


def make_plan(trials: list[TrialPlan], speeds: dict[str, float]) -> Plan:
    plan = Plan(trials, dict(speeds))
    plan.order = assign({t.id: t.cost for t in trials}, plan.speeds)
    return plan


def render_plan(plan: Plan, header: str = "") -> str:
    """The queues, the order on each, and each queue's estimated relative finish time."""
    costs = {t.id: t.cost for t in plan.trials}
    finish = plan.finish()
    makespan = max(finish.values()) if finish else 0.0
    unit = max(costs.values()) if costs else 1.0  # costs shown relative to the largest trial
    lines = [header] if header else []
    for q, ids in plan.order.items():
        rel = finish[q] / makespan if makespan else 0.0
        lines.append(f"queue {q} (speed {plan.speeds[q]:g}): {len(ids)} trials, "
                     f"finishes at {rel:.2f} of the sweep")
        lines += [f"  {i + 1}. {tid}  cost {costs[tid] / unit:.2f}" for i, tid in enumerate(ids)]
    bound = plan.lower_bound()
    gap = (makespan / bound - 1) * 100 if bound else 0.0
    lines.append(f"estimated makespan {makespan / unit:.2f} x the largest trial; lower bound "
                 f"{bound / unit:.2f} (+{gap:.1f}%)")
    return "\n".join(lines)
