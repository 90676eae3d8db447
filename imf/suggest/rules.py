"""The rules of ``imf suggest``: more seeds for ties, neighbours of the best cell, a
warm-start continuation of a run that was still improving when it ended, and an ensemble of
the best run's top checkpoints when they are tied within noise.

Every proposal but the ensemble is one ``imf trial`` run built on the config.yaml of a run already in the folder
(so everything not named in the command stays as it was) and written into that folder, where
the next ``imf suggest`` sees it as tried.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imf.config import BUILTIN_TRAINER, load_config, load_program_config, trainer_name
from imf.errors import ConfigError
from imf.report import IMF, Cell, Curve, Report, Terms, TrialRow
from imf.stats import clear_difference, difference_se, pm, signed, standard_error, tied_within_noise
from imf.store import CONFIG, PARAMS, RunLayout, ensemble_id, readable_id
from imf.suggest.tried import Tried, full_config, norm_value, settings_of

STEPS = {"policy.n_emb": 128, "policy.n_layer": 6}  # the reference grid's spacing (one value tried)
SIZE_KEYS = {"policy.n_emb": "n_emb", "policy.n_layer": "n_layer"}
NEW_SEEDS = 2  # replicates proposed per tied cell
MAX_TIED = 3  # tied cells besides the best that get seeds
MAX_SEEDS = 3  # seeds of the best cell a neighbour is run with
RISING_K = 3  # rollouts in each window of the rising test
MAX_MEMBERS = 5  # top checkpoints an ensemble proposal takes
# benchmarks/RUNS.md, "Ensembles": on the low-dim run, the top-5 weight soup tied the best
# checkpoint at one model's latency; averaging the top-5 action chunks scored lower.
ENSEMBLE_MODE = "weights"


@dataclass
class Proposal:
    kind: str  # "seeds", "neighbour", "continue", "ensemble", "more-data" or "curriculum"
    id: str
    reason: str
    argv: list[str]
    settings: dict[str, Any]  # what it changes against the run it is built on
    seed: int


@dataclass
class Context:
    folder: Path
    report: Report
    tried: Tried
    prefix: str
    terms: Terms = IMF  # how reasons print a score: a program's metric as written, or imf's
    proposals: list[Proposal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def trials_of(self, cell: Cell) -> list[TrialRow]:
        return [t for t in self.report.trials if t.cell == cell.label]

    def new_id(self, tid: str) -> str:
        return unique_id(tid, self.tried.ids | {p.id for p in self.proposals})


def unique_id(base: str, taken: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3``... the first not in ``taken``."""
    unique, number = base, 1
    while unique in taken:
        number += 1
        unique = f"{base}-{number}"
    return unique


def cell_words(cell: Cell, terms: Terms = IMF) -> str:
    seeds = f"{cell.n} seed{'s' if cell.n != 1 else ''}"
    return f"{cell.label} ({terms.pm(cell.mean, cell.se)}, {seeds})"


def trial_id(prefix: str, settings: dict[str, Any], seed: int, varying: list[str]) -> str:
    """``<prefix>-<mask>-e<n_emb>-l<n_layer>-s<seed>`` (``<prefix>-s<seed>`` without a policy.mask)
    plus ``-<key><value>`` per varying key."""
    params = {name: settings.get(key) for name, key in PARAMS.items()} if "policy.mask" in settings else None
    return readable_id(prefix, seed, [(k, settings.get(k)) for k in varying], params=params)


def shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value).lower() if isinstance(value, bool) else str(value)


def base_run(ctx: Context, cell: Cell) -> TrialRow | None:
    """The cell's best scored trial that left a config.yaml to build on."""
    rows = [t for t in ctx.trials_of(cell) if t.run_dir and (Path(t.run_dir) / CONFIG).is_file()]
    rows.sort(key=lambda t: -(t.best_score if t.best_score is not None else -math.inf))
    return rows[0] if rows else None


def propose(ctx: Context, kind: str, base: TrialRow, changes: dict[str, Any], seed: int,
             reason: str, extra: list[str] | None = None, tid: str | None = None) -> Proposal | None:
    """One ``imf trial`` on ``base``'s config with ``changes``; None when the config refuses it."""
    run_dir = Path(base.run_dir)
    config = run_dir / CONFIG
    overrides = [f"{k}={_value_text(v)}" for k, v in changes.items()]
    try:
        if trainer_name(str(config)) == BUILTIN_TRAINER:
            load_config(str(config), overrides)
        else:  # a trainer's program config: the keys are its params
            load_program_config(str(config), overrides)
    except ConfigError as exc:
        ctx.notes.append(f"not proposed ({kind}, {', '.join(overrides)}): {exc}")
        return None
    settings = {**(settings_of(run_dir) or {}), **{k: norm_value(v) for k, v in changes.items()}}
    init = Path(extra[extra.index("--init-from") + 1]) if extra and "--init-from" in extra else None
    same = ctx.tried.exists(settings, seed, init)
    if same is not None:  # never propose a run that exists (under any id)
        ctx.notes.append(f"not proposed ({kind}, seed {seed}): trial {same.id} is that run already")
        return None
    varying = sorted(next((c.params for c in ctx.report.trends.cells if c.params), {}))
    tid = ctx.new_id(tid or trial_id(ctx.prefix, settings, seed, varying))
    out = ctx.folder / tid
    argv = ["imf", "trial", shown_path(config), *overrides, *(extra or []), "--seed", str(seed),
            "--id", tid, "--out", str(out)]
    proposal = Proposal(kind, tid, reason, argv, dict(changes), seed)
    ctx.proposals.append(proposal)
    return proposal


# more seeds -----------------------------------------------------------------
def _seed_pool(ctx: Context, used: set[int], count: int) -> list[int]:
    """Seeds other cells already ran (paired comparisons) first, then new ones above them."""
    everywhere = sorted({t.seed for t in ctx.report.trials if isinstance(t.seed, int)})
    pool = [s for s in everywhere if s not in used]
    top = max(everywhere + sorted(used), default=41)
    while len(pool) < count:
        top += 1
        if top not in used:
            pool.append(top)
    return pool[:count]


def more_seeds(ctx: Context, best: Cell) -> None:
    """Replicates for the best cell and the cells tied with it within noise."""
    scored = [c for c in ctx.report.trends.cells if c.mean is not None]
    tied_labels = (ctx.report.trends.best_cell or {}).get("tied_with") or []
    tied = sorted((c for c in scored if c.label in tied_labels), key=lambda c: -c.mean)
    if best.se is None:
        reasons = {best.label: f"the best cell {cell_words(best, ctx.terms)} has no noise estimate yet"}
        targets = [best]
    elif not tied:
        return
    else:
        if len(tied) > MAX_TIED:
            ctx.notes.append(f"{len(tied) - MAX_TIED} more cell(s) tied with the best get no seeds "
                             f"here (the {MAX_TIED} highest do)")
        targets = [best, *tied[:MAX_TIED]]
        reasons = {best.label: f"the best cell {cell_words(best, ctx.terms)} is tied within noise with "
                               f"{', '.join(c.label for c in tied)}"}
        reasons.update({c.label: f"{cell_words(c, ctx.terms)} is tied within noise with the best "
                                 f"{cell_words(best, ctx.terms)}" for c in tied[:MAX_TIED]})
    for cell in targets:
        base = base_run(ctx, cell)
        if base is None:
            ctx.notes.append(f"cell {cell.label}: no run with a config.yaml to build seeds on")
            continue
        settings = settings_of(Path(base.run_dir)) or {}
        used = {s for s in cell.seeds if isinstance(s, int)}
        seeds = [s for s in _seed_pool(ctx, used, NEW_SEEDS) if not ctx.tried.has(settings, s)]
        # a replicate of a warm-started run (a more-data run, say) starts from the same checkpoint
        init = next((r.init_from for r in ctx.tried.runs if r.id == base.id), None)
        for seed in seeds:
            propose(ctx, "seeds", base, {}, seed,
                     f"{reasons[cell.label]}; seeds {', '.join(map(str, seeds))} take it from "
                     f"n {cell.n} to {cell.n + len(seeds)}" + (f", each a warm start of {shown_path(init)} "
                                                              "as its run was" if init else ""),
                     extra=["--init-from", shown_path(init)] if init else None)


# neighbours -----------------------------------------------------------------
def _axis_values(cells: list[Cell], key: str) -> list[Any]:
    if key in SIZE_KEYS:
        values = [getattr(c, SIZE_KEYS[key]) for c in cells]
    else:
        values = [norm_value(c.params.get(key)) for c in cells]
    return sorted({v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)})


def _candidates(key: str, value: Any, tried: list[Any]) -> list[tuple[Any, str]]:
    """(value, where) next to ``value`` along ``key``. n_emb and n_layer: one step each way, the
    step being the smallest spacing tried (the reference step, 128 or 6, when one value was
    tried), so an untried gap or the value beyond an edge; other numeric axes: one step beyond
    the edge the best sits on (the tried spacing, geometric for positive floats)."""
    edge = ("the only value" if len(tried) == 1 else "the top edge" if value == tried[-1]
            else "the bottom edge" if value == tried[0] else "inside the tried range")
    if key in STEPS:
        gaps = [b - a for a, b in zip(tried, tried[1:])]
        step = min(gaps) if gaps else STEPS[key]
        return [(v, edge) for v in (value - step, value + step) if v > 0]
    if len(tried) < 2 or edge.startswith("inside"):
        return []
    at_top = value == tried[-1]
    near = tried[-2] if at_top else tried[1]
    if all(isinstance(v, int) for v in tried):
        return [(value + (value - near), edge)]
    if value > 0 and near > 0:
        return [(value * (value / near), edge)]
    return [(value + (value - near), edge)]


def neighbours(ctx: Context, best: Cell) -> None:
    """The best cell's neighbours along every numeric grid axis that were not tried."""
    cells = [c for c in ctx.report.trends.cells if c.mean is not None]
    base = base_run(ctx, best)
    if base is None:
        ctx.notes.append(f"best cell {best.label}: no run with a config.yaml to build on")
        return
    settings = settings_of(Path(base.run_dir)) or {}
    axes = list(STEPS) + sorted(k for k in best.params if k not in STEPS)
    seeds = sorted(s for s in best.seeds if isinstance(s, int))[:MAX_SEEDS] or [base.seed or 42]
    for key in axes:
        value = norm_value(settings.get(key))
        tried_values = _axis_values(cells, key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not tried_values:
            continue
        for candidate, edge in _candidates(key, value, tried_values):
            if candidate <= 0 < tried_values[0]:  # a step below a count's bottom edge: no such value
                continue
            candidate = norm_value(_value_text(candidate))
            changed = {**settings, key: candidate}
            if ctx.tried.has(changed):
                ctx.notes.append(f"{key}={_value_text(candidate)} next to the best was already tried")
                continue
            name = key.rsplit(".", 1)[-1]
            where = f"the best is {edge} of {name} tried ({', '.join(map(_value_text, tried_values))})"
            for seed in seeds:
                propose(ctx, "neighbour", base, {key: candidate}, seed,
                         f"neighbour of the best {cell_words(best, ctx.terms)}: {name} {_value_text(candidate)} "
                         f"instead of {_value_text(value)}; {where}")


# continuation ---------------------------------------------------------------
def window_mean(points: list[list[Any]]) -> tuple[float, float]:
    """Mean of a window of rollouts and its SE: the mean of their per-episode SEs (the rollouts
    share their test seeds, so their errors are correlated), else the spread of the window."""
    scores = [p[1] for p in points]
    ses = [p[2] for p in points]
    mean = sum(scores) / len(scores)
    if all(se is not None for se in ses):
        return mean, sum(ses) / len(ses)
    return mean, standard_error(scores)


def rising(curve: Curve | None, k: int = RISING_K) -> tuple[bool, str]:
    """Was the curve still rising at its end? The mean of the last ``k`` rollouts must exceed
    the mean of the ``k`` before by more than 1.96 standard errors of the difference."""
    points = [p for p in (curve.rollouts if curve else []) if p[1] is not None]
    if len(points) < 2 * k:
        return False, f"{len(points)} rollout(s), fewer than the {2 * k} the rising test needs"
    last, last_se = window_mean(points[-k:])
    prev, prev_se = window_mean(points[-2 * k:-k])
    words = (f"mean of the last {k} rollouts {pm(last, last_se)} vs the {k} before "
             f"{pm(prev, prev_se)} ({signed(last - prev, difference_se(last_se, prev_se))})")
    return last > prev and clear_difference(last, last_se, prev, prev_se), words


def best_run(ctx: Context, best: Cell) -> tuple[TrialRow, Curve | None] | None:
    """The best cell's best scored run with a folder, and its curve."""
    rows = [t for t in ctx.trials_of(best) if t.best_score is not None and t.run_dir]
    if not rows:
        return None
    top = max(rows, key=lambda t: t.best_score)
    return top, next((c for c in ctx.report.curves if c.id == top.id), None)


def continuation(ctx: Context, best: Cell) -> None:
    """A warm start from the best run's best.pt when its curve was still rising at its end."""
    found = best_run(ctx, best)
    if found is None:
        return
    top, curve = found
    is_rising, words = rising(curve)
    if not is_rising:
        ctx.notes.append(f"no continuation of {top.id}: not clearly rising at its end ({words})")
        return
    if top.status != "completed":
        ctx.notes.append(f"no continuation of {top.id}: it ended {top.status}")
        return
    run_dir = Path(top.run_dir)
    best_pt = RunLayout(run_dir).best
    if not best_pt.is_file():
        ctx.notes.append(f"no continuation of {top.id}: {best_pt} is missing")
        return
    done = ctx.tried.warm_started_from(best_pt) or sorted({f"{top.id}-cont"} & ctx.tried.ids)
    if done:
        ctx.notes.append(f"continuation of {top.id} already tried ({', '.join(done)})")
        return
    epochs = full_config(run_dir).get("training.num_epochs")
    epochs = epochs if isinstance(epochs, int) and epochs > 0 else top.final_epoch or 1
    seed = top.seed if isinstance(top.seed, int) else 42
    propose(ctx, "continue", top, {"training.num_epochs": epochs}, seed,
             f"the best run {top.id} was still rising at its end: {words}; warm-start from its "
             f"best.pt for another {epochs} epochs",
             extra=["--init-from", shown_path(best_pt)], tid=f"{top.id}-cont")


# ensemble -------------------------------------------------------------------
def _top_checkpoints(run_dir: Path, curve: Curve | None) -> list[tuple[int, float, float | None]]:
    """(0-based epoch, score, SE) of the run's top-k checkpoint files, best first; score and SE
    from the rollout of that epoch (the file name rounds the score), else the name's score."""
    points = {p[0]: p for p in (curve.rollouts if curve else []) if p[1] is not None}
    found = []
    for _, epoch, score in RunLayout(run_dir).topk_files():
        point = points.get(epoch + 1)  # the curve counts epochs from 1
        found.append((epoch, point[1], point[2]) if point else (epoch, score, None))
    return sorted(found, key=lambda f: (-f[1], f[0]))


def ensemble(ctx: Context, best: Cell) -> None:
    """An ensemble of the best run's top checkpoints when they are tied within noise."""
    found = best_run(ctx, best)
    if found is None:
        return
    top, curve = found
    checkpoints = _top_checkpoints(Path(top.run_dir), curve)
    if len(checkpoints) < 2 or any(se is None for _, _, se in checkpoints[:2]):
        why = "fewer than 2 top-k checkpoints" if len(checkpoints) < 2 else "no per-episode scores"
        ctx.notes.append(f"no ensemble of {top.id}: {why}")
        return
    _, lead, lead_se = checkpoints[0]
    tied = [c for c in checkpoints if c[2] is not None and tied_within_noise(lead, lead_se, c[1], c[2])]
    members = tied[:MAX_MEMBERS]
    if len(members) < 2:
        _, score, se = checkpoints[1]
        ctx.notes.append(f"no ensemble of {top.id}: its best checkpoint {pm(lead, lead_se)} is clear "
                         f"of the next {pm(score, se)}")
        return
    tid = ensemble_id(top.id, len(members), ENSEMBLE_MODE)
    if tid in ctx.tried.ids:
        ctx.notes.append(f"ensemble of {top.id}'s top {len(members)} already made ({tid})")
        return
    scores = ", ".join(f"{score:.3f}" for _, score, _ in members)
    reason = (f"the top {len(members)} checkpoints of the best run {top.id} ({scores}) are tied "
              f"within noise with its best ({pm(lead, lead_se)}): their {ENSEMBLE_MODE} ensemble "
              "costs no training and one model's latency")
    argv = ["imf", "ensemble", shown_path(Path(top.run_dir)), "--top", str(len(members)), "--mode", ENSEMBLE_MODE]
    ctx.proposals.append(Proposal("ensemble", tid, reason, argv,
                                  {"top": len(members), "mode": ENSEMBLE_MODE},
                                  top.seed if isinstance(top.seed, int) else 0))
