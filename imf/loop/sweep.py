"""One round of ``imf loop`` as a sweep: its proposals become the trials of DIR/loop-rNN.

Every proposal builds on the config.yaml of a run in the folder; a copy of it goes into the
round's sweep folder (configs/<trial>.yaml, so remote hosts get each one under its own name)
and the trial carries its own overrides, seed and warm-start checkpoint. The sweep engine runs
them like any sweep; a round whose sweep.json exists is resumed, one that finished is left.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from imf.atomic import atomic_write_text
from imf.config import BUILTIN_TRAINER, Config, flat_params, load_config, load_program_config, trainer_name
from imf.errors import ConfigError, LoopError
from imf.loop.state import LoopState, Planned, Round
from imf.store import params_of
from imf.sweep import (Engine, Plan, SweepDir, SweepState, TrialPlan, cost_of, load_hosts, render_plan,
                       resolve_queues, resume_sweep, sweep_state, write_sweep)


def _trial_plan(planned: Planned) -> TrialPlan:
    if trainer_name(planned.config) != BUILTIN_TRAINER:  # a trainer's program: one unit of cost each
        try:
            cfg = load_program_config(planned.config, planned.overrides, seed=planned.seed)
        except ConfigError as exc:
            raise LoopError(f"proposal {planned.id}: {exc}") from None
        return TrialPlan(planned.id, list(planned.overrides), planned.seed, 0, flat_params(cfg.params), 1.0)
    try:
        cfg = load_config(planned.config, planned.overrides)
    except ConfigError as exc:
        raise LoopError(f"proposal {planned.id}: {exc}") from None
    epochs = cfg.training.num_epochs
    return TrialPlan(planned.id, list(planned.overrides), planned.seed, epochs, params_of(cfg),
                     cost_of(cfg.policy.n_emb, cfg.policy.n_layer, epochs))


def round_sweep(folder: Path, loop: LoopState, current: Round) -> tuple[SweepDir, SweepState, Plan]:
    """The round's sweep, planned and checked; nothing is written."""
    sdir = SweepDir(folder / current.sweep)
    plans = [_trial_plan(p) for p in current.proposals]
    queues = resolve_queues(loop.queues, load_hosts(loop.hosts))
    first = current.proposals[0].config
    base = load_config(first) if trainer_name(first) == BUILTIN_TRAINER else Config()
    if trainer_name(first) != BUILTIN_TRAINER:
        base.logging.stores = load_program_config(first, []).stores
    state, plan = sweep_state(f"{folder.resolve().name}-r{current.number:02d}",
                           current.proposals[0].config, plans, queues, base,
                           final_eval=loop.final_eval)
    state.hypothesis = current.hypothesis
    by_id = {p.id: p for p in current.proposals}
    for trial in state.trials:
        planned = by_id[trial.id]
        trial.config = str((sdir.path / "configs" / f"{trial.id}.yaml").resolve())
        trial.init_from = planned.init_from
    return sdir, state, plan


def run_round_sweep(folder: Path, loop: LoopState, current: Round,
                    echo: Callable[[str], None]) -> None:
    """Run the round's sweep to its end: a new one, or the one a stopped loop left."""
    sdir = SweepDir(folder / current.sweep)
    if sdir.exists():
        if sdir.load().status != "finished":
            echo(f"round {current.number}: resuming its sweep {sdir.path}")
            resume_sweep(sdir.path, echo)
        return
    sdir, state, plan = round_sweep(folder, loop, current)
    by_id = {p.id: p for p in current.proposals}
    (sdir.path / "configs").mkdir(parents=True, exist_ok=True)
    for trial in state.trials:  # before sweep.json: a sweep that exists has its configs
        atomic_write_text(Path(trial.config or ""), Path(by_id[trial.id].config).read_text(encoding="utf-8"))
    write_sweep(sdir, state)
    for line in sdir.log_lines(render_plan(plan, f"plan of round {current.number} in {sdir.path}").splitlines()):
        echo(line)
    Engine(sdir, state, echo).run()
