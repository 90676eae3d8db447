"""Planning a sweep of a trainer's program (a config with ``trainer:``, docs/trainers.md).

``--grid key=v1,v2`` keys are settings under the config's ``params``; ``--seeds`` runs each
point once per seed. Every trial's config is built and checked (placeholders, metric goal,
keys under params) before anything is written. Trial ids are ``<name>-<key><value>...-s<seed>``;
each trial costs the same (the planner spreads them evenly over the queues).
"""
from __future__ import annotations

import itertools

from imf.config import STDOUT, ProgramConfig, load_program_config, param_value
from imf.errors import ConfigError, SweepError
from imf.store import LOGS, SCORE_KEYS, override_pairs, readable_id, trial_hash
from imf.sweep.plan import NAME_RE, TrialPlan, parse_seeds
from imf.sweep.state import HalvingState

__all__ = ["check_program_halving", "parse_seeds", "program_trials"]


def check_program_halving(cfg: ProgramConfig, halving: HalvingState) -> None:
    """``--halving`` of a program's sweep compares the metric's K-th value (rung K) across trials:
    the metric must come value after value (imf mirrors it into logs.json.txt, whose rows the
    rule reads), or be Diffusion Policy's test score in the program's own logs.json.txt."""
    source = cfg.metric.source
    rungs = ",".join(map(str, halving.rungs))
    if source != STDOUT and source.endswith(".json"):
        raise SweepError(f"--halving {halving.eta} --rungs {rungs}: metric.source {source!r} holds one value; "
                         "halving compares the metric's K-th value, so name a JSON-lines log or stdout")
    if source.endswith("/" + LOGS) and cfg.metric.name not in SCORE_KEYS:
        raise SweepError(f"--halving: metric.source {source!r} is the program's own {LOGS}; halving reads "
                         f"{' or '.join(SCORE_KEYS)} there, not {cfg.metric.name!r}: log the metric elsewhere")


def program_axes(grids: list[str], params: dict) -> list[tuple[str, list[str]]]:
    """``["optim.lr=0.01,0.1"]`` -> [("optim.lr", ["0.01", "0.1"])]; keys under params."""
    axes: list[tuple[str, list[str]]] = []
    for grid in grids:
        key, sep, values = grid.partition("=")
        key = key.strip().removeprefix("params.")
        words = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key or not words:
            raise SweepError(f"--grid '{grid}': expected key=v1,v2 with a key under the config's params")
        try:
            values = [param_value(params, key, word, f"--grid '{grid}'") for word in words]
        except ConfigError as exc:
            raise SweepError(str(exc)) from None
        if key in (k for k, _ in axes):
            raise SweepError(f"--grid: params key '{key}' is given by more than one grid")
        for i, value in enumerate(values):
            first = values.index(value)
            if first != i:
                raise SweepError(f"--grid '{grid}': {words[first]} and {words[i]} are one value of {key} "
                                 f"({value!r}); give each value once")
        axes.append((key, words))
    return axes


def program_trials(name: str, config: str, grids: list[str], overrides: list[str], *,
                   seed: int | None = None, seeds: list[int] | None = None) -> list[TrialPlan]:
    """Every grid point (and seed) of a program config as a checked trial."""
    if not NAME_RE.match(name):
        raise SweepError(f"--name {name!r}: use letters, digits, '.', '_' and '-' (a folder name)")
    base = load_program_config(config, overrides, seed=seed)
    axes = program_axes(grids, base.params)
    trial_seeds = list(seeds) if seeds else [base.seed]
    trials = []
    for combo, trial_seed in itertools.product(itertools.product(*(v for _, v in axes)), trial_seeds):
        own = [f"{k}={v}" for (k, _), v in zip(axes, combo)]
        cfg = load_program_config(config, overrides + own, seed=trial_seed)
        trials.append(TrialPlan(readable_id(name, trial_seed, override_pairs(own), seed_last=True), own, trial_seed, 0,
                                {k: _value(cfg, k) for k, _ in axes}, 1.0,
                                trial_hash(cfg.identity_dict(), trial_seed, None)))
    return trials


def _value(cfg: ProgramConfig, key: str) -> object:
    node: object = cfg.params
    for part in key.split("."):
        node = node[part]  # type: ignore[index]
    return node


