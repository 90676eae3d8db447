"""``imf sweep`` as a library: check a request, plan it, start it, or resume a sweep folder.

Everything a request names (config keys and values, grids, queue specs, scheduler and store
plugins, the hosts file) is checked before a file is written or a process starts.
"""
from __future__ import annotations

import math
import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import yaml

from imf import registry
from imf.atomic import atomic_write_text
from imf.config import (BUILTIN_TRAINER, DEFAULT_PRESET, Config, check_final_eval, final_eval_seeds, load_config,
                        load_preset_dict, load_program_config, mask_overrides, trainer_name)
from imf.errors import SweepError
from imf.scheduler import GROUP as SCHEDULERS, scheduler_for, scheme_of
from imf.sweep.engine import Engine
from imf.sweep.gpus import GpuVerdict
from imf.sweep.halving import check_rungs, describe as describe_halving, plan_halving
from imf.sweep.plan import (Plan, TrialPlan, build_trials, check_one_value, make_plan, parse_seeds,
                             render_plan)
from imf.sweep.programs import check_program_halving, program_trials
from imf.sweep.probe import check_lines, plugin_names, start_problems
from imf.sweep.queues import load_hosts, resolve_queues
from imf.sweep.rerun import Rerun
from imf.store import check_identity, project_root
from imf.sweep.differences import difference_lines
from imf.sweep.estimate import estimate_lines
from imf.sweep.shapes import check_masks
from imf.sweep.folder import SweepDir
from imf.sweep.state import QueueState, SweepState, TrialState

__all__ = ["SweepError", "SweepRequest", "describe", "dry_run", "load_plugins", "parse_seeds",
           "plan_sweep", "resume_sweep", "start_sweep"]

DEFAULT_COMMAND = "{python} -m imf trial"
COMMAND_ENV = "IMF_TRIAL_COMMAND"  # a stand-in trial command prefix (tests, benchmarks)
CONFIG_FILE = "sweep_config.yaml"


@dataclass
class SweepRequest:
    config: str = DEFAULT_PRESET
    grids: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    hosts: str | None = None
    name: str | None = None
    out: Path = Path("runs")
    epochs: int | None = None
    seed: int | None = None
    mask: str | None = None
    retries: int | None = None
    stall_timeout: float | None = None
    poll: float | None = None
    notify: str | None = None
    overrides: list[str] = field(default_factory=list)
    seeds: list[int] | None = None  # every grid point once per seed (two or more)
    final_eval: int | None = None  # selection episodes re-scoring each trial's best.pt
    halving: int | None = None  # successive halving's ETA (--halving), with --rungs
    rungs: str | None = None  # "E1,E2,...": the epochs at which trials are compared
    min_queues: int | None = None  # --min-queues: queues that must pass their check (None: all)


def _check_plugins(group: str, wanted: set[str]) -> None:
    """Unknown plugin names are an error; nothing is imported (a trial loads its plugins)."""
    installed = registry.names(group)
    for name in sorted(wanted):
        if name not in installed:
            raise registry.unknown(group, name)


def _positive(value: float, flag: str, allow_zero: bool = False) -> float:
    if not 0 <= value < math.inf or (value == 0 and not allow_zero):
        raise SweepError(f"{flag}: must be a finite number {'>= 0' if allow_zero else '> 0'}, "
                         f"got {value}")
    return value


def _given(value: float | None, default: float) -> float:
    return default if value is None else value


def plan_sweep(req: SweepRequest) -> tuple[SweepDir, SweepState, Plan]:
    """Check everything ``req`` names and plan it; nothing is written."""
    if trainer_name(req.config) != BUILTIN_TRAINER:
        return _plan_program_sweep(req)
    halving = plan_halving(req.halving, req.rungs)
    check_one_value(req.overrides)  # before the config is built, which would only see a bad number
    base = load_config(req.config, req.overrides)
    defaults = base.sweep
    name = req.name if req.name is not None else defaults.name
    trials = build_trials(name, req.config, req.grids or defaults.grid, req.overrides,
                          mask=req.mask, seed=req.seed, epochs=req.epochs, seeds=req.seeds)
    if req.final_eval is not None:
        final_eval_seeds(req.final_eval, base.eval)
    if halving is not None:  # a grid of rollout_every: each trial's rollouts are its own
        varied = any(o.startswith("training.rollout_every=") for t in trials for o in t.overrides)
        check_rungs(halving, {t.id: t.epochs for t in trials}, None if varied else base.training.rollout_every)
    seed_axis = [f"training.seed={','.join(map(str, req.seeds))}"] if len(req.seeds or []) > 1 else []
    _check_plugins("imf.masks", {t.params["mask"] for t in trials})
    _check_plugins("imf.objectives", {t.params["objective"] for t in trials})
    queues = resolve_queues(req.queues or defaults.queues, load_hosts(req.hosts))
    for store in base.logging.stores:
        registry.check("imf.stores", store)
    for tracker in base.logging.trackers:  # a missing tracker or its package fails the plan
        if tracker != "none":
            registry.requirements(registry.get("imf.trackers", tracker))
    state, plan = sweep_state(
        name, req.config, trials, queues, base,
        overrides=list(req.overrides) + mask_overrides(req.mask),
        grid=list(req.grids or defaults.grid) + seed_axis, final_eval=req.final_eval,
        retries=req.retries, stall_timeout=req.stall_timeout, poll=req.poll, notify=req.notify)
    state.halving = halving
    state.min_queues = check_min_queues(req.min_queues, len(state.queues))
    state.halving = halving
    sdir = SweepDir(Path(req.out) / name)
    root = project_root(sdir.path)
    for trial in trials:  # an id the project holds with another config fails the plan
        check_identity(root, trial.id, trial.config_hash)
    return sdir, state, plan


def _plan_program_sweep(req: SweepRequest) -> tuple[SweepDir, SweepState, Plan]:
    """``plan_sweep`` for a trainer's program config (imf/sweep/programs.py)."""
    imf_only = {"--mask": req.mask, "--epochs": req.epochs}
    given = [flag for flag, value in imf_only.items() if value is not None]
    if given:
        raise SweepError(f"{given[0]} is for imf's own trainer; {req.config} runs a program")
    registry.check("imf.trainers", trainer_name(req.config))
    halving = plan_halving(req.halving, req.rungs)
    if halving is not None:
        check_program_halving(load_program_config(req.config, req.overrides), halving)
    check_final_eval(load_program_config(req.config, req.overrides), req.final_eval, req.config)
    base = Config()
    name = req.name if req.name is not None else load_program_config(req.config, req.overrides).name
    trials = program_trials(name, req.config, req.grids, req.overrides, seed=req.seed, seeds=req.seeds)
    base.logging.stores = load_program_config(req.config, req.overrides).stores
    for store in base.logging.stores:
        registry.check("imf.stores", store)
    queues = resolve_queues(req.queues or base.sweep.queues, load_hosts(req.hosts))
    seed_axis = [f"seed={','.join(map(str, req.seeds))}"] if len(req.seeds or []) > 1 else []
    state, plan = sweep_state(name, req.config, trials, queues, base, overrides=list(req.overrides),
                              grid=list(req.grids) + seed_axis, retries=req.retries, final_eval=req.final_eval,
                              stall_timeout=req.stall_timeout, poll=req.poll, notify=req.notify)
    state.min_queues = check_min_queues(req.min_queues, len(state.queues))
    state.halving = halving
    sdir = SweepDir(Path(req.out) / name)
    root = project_root(sdir.path)
    for trial in trials:
        check_identity(root, trial.id, trial.config_hash)
    return sdir, state, plan


def sweep_state(name: str, config: str, trials: list[TrialPlan], queues: list[QueueState],
                base: Config, *, overrides: list[str] | None = None, grid: list[str] | None = None,
                final_eval: int | None = None, retries: int | None = None,
                stall_timeout: float | None = None, poll: float | None = None,
                notify: str | None = None) -> tuple[SweepState, Plan]:
    """The state of a new sweep of checked ``trials`` on ``queues``, placed by the planner;
    settings not given come from ``base.sweep``."""
    defaults = base.sweep
    plan = make_plan(trials, {q.name: q.speed for q in queues})
    state = SweepState(
        name=name, config=config,
        trial_command=shlex.split(os.environ.get(COMMAND_ENV) or DEFAULT_COMMAND),
        overrides=list(overrides or []), grid=list(grid or []), final_eval=final_eval,
        retries=int(_positive(_given(retries, defaults.retries), "--retries", True)),
        stall_timeout=_positive(_given(stall_timeout, defaults.stall_timeout), "--stall-timeout"),
        poll=_positive(_given(poll, defaults.poll_interval), "--poll"),
        notify=notify, stores=list(base.logging.stores), queues=queues)
    by_id = {t.id: t for t in trials}
    for queue, ids in plan.order.items():
        for position, tid in enumerate(ids):
            t = by_id[tid]
            state.trials.append(TrialState(t.id, t.overrides, t.seed, t.epochs, t.params, t.cost,
                                           queue, order=position))
    return state, plan


def describe(sdir: SweepDir, state: SweepState, plan: Plan) -> str:
    """The dry-run text: what would run where, in which order, and each trial's command."""
    header = (f"sweep '{state.name}' in {sdir.path}: {len(state.trials)} trials on "
              f"{len(state.queues)} queues (config {state.config}, retries {state.retries}, "
              f"stall timeout {state.stall_timeout:g}s)")
    header += f"; {describe_halving(state.halving)}" if state.halving else ""
    lines = [render_plan(plan, header), *difference_lines(state), "commands:"]
    engine = Engine(sdir, state)
    planned = str((sdir.path / CONFIG_FILE).resolve())  # start_sweep writes a YAML config there
    by_id = {t.id: t for t in state.trials}
    for trial in (by_id[tid] for ids in plan.order.values() for tid in ids):
        job = engine.job_request(trial)
        if job.config_text is not None:
            job = replace(job, config=planned)
        lines.append(f"  {trial.id} on {trial.queue}: {engine.scheduler(trial.queue).describe(job)}")
    return "\n".join(lines)


def load_plugins(state: SweepState) -> list[str]:
    """Import every plugin the plan uses (the trials' masks, objectives, curricula and trackers,
    the controller's schedulers and stores), so a broken one fails the dry run rather than its
    trials; this may import torch (objectives do). Returns ``group: names`` lines of what was loaded."""
    wanted: dict[str, set[str]] = {}
    for item in plugin_names(state):
        group, _, name = item.partition(":")
        wanted.setdefault(group, set()).add(name)
    wanted.update({SCHEDULERS: {scheme_of(q.spec) for q in state.queues}, "imf.stores": set(state.stores)})
    for group, names in wanted.items():
        for name in sorted(names):
            registry.check(group, name)
    return [f"{group}: {', '.join(sorted(names))}" for group, names in wanted.items() if names]


def check_min_queues(value: int | None, named: int) -> int | None:
    if value is not None and not 1 <= value <= named:
        raise SweepError(f"--min-queues {value}: expected 1..{named} (the queues named)")
    return value


def dry_run(req: SweepRequest, estimate: bool = False) -> str:
    """``imf sweep --dry-run``: check and plan everything, load its plugins, check every queue
    and probe the GPU queues' hosts (as a start would), run nothing; refused (non-zero) wherever
    the start would refuse: the name taken, a preflight, too few queues passing."""
    sdir, state, plan = plan_sweep(req)
    check_free(sdir, state)
    loaded = load_plugins(state)
    if trainer_name(state.config) == BUILTIN_TRAINER:
        check_masks(state)  # each trial's masks at its shapes, numpy only: a wrong one refused here
    down, verdicts = check_queues(Engine(sdir, state, echo=lambda _: None))
    gpus = [f"  gpu {v.queue}: {v.text}" for v in verdicts]
    return "\n".join([describe(sdir, state, plan), *(["gpu probes (a queue without its GPU is down "
                      "at the start):", *gpus] if gpus else []), *check_lines(state, down),
                      "plugins loaded: " + "; ".join(loaded), *(estimate_lines(state, plan) if estimate else [])])


def check_free(sdir: SweepDir, state: SweepState) -> None:
    """A new sweep's name is free in its --out, and every queue spec's preflight passes."""
    if sdir.exists():
        raise SweepError(f"{sdir.path} already holds a sweep; continue it with --resume {sdir.path} "
                         "or choose another --name")
    for spec, options in {q.spec: q.options for q in state.queues}.items():
        scheduler_for(spec, options).preflight()  # e.g. an unknown Slurm partition: nothing written


def check_queues(engine: Engine) -> tuple[dict[str, str], list[GpuVerdict]]:
    """Check every queue of a new sweep as its start does (imf/sweep/probe.py): the queues that
    would be down (-> why) and the GPU probes; SweepError when fewer than --min-queues pass."""
    try:
        down, verdicts = start_problems(engine.state, engine.scheduler)
    finally:
        for sch in engine.schedulers.values():  # the connections the checks opened
            sch.close()
    engine.require_queues(down)
    return down, verdicts


def start_sweep(req: SweepRequest, echo: Callable[[str], None] = print,
                on_start: Callable[[SweepDir], None] | None = None) -> Engine:
    """Plan ``req``, write the sweep folder and run the sweep to its end; ``on_start`` is told
    the sweep folder once it exists (the live view follows it)."""
    sdir, state, plan = plan_sweep(req)
    engine = Engine(sdir, state, echo)
    check_free(sdir, state)
    check_queues(engine)  # refused before anything is written (the engine checks again as it starts)
    write_sweep(sdir, state, on_start)
    header = f"plan of sweep {state.name} in {sdir.path}" + (f"; {describe_halving(state.halving)}"
                                                               if state.halving else "")
    for line in sdir.log_lines(render_plan(plan, header).splitlines()):
        echo(line)
    engine.run()
    return engine


def write_sweep(sdir: SweepDir, state: SweepState,
                on_start: Callable[[SweepDir], None] | None = None) -> None:
    """Write a new sweep's folder: its resolved config and sweep.json (checks first)."""
    check_free(sdir, state)
    sdir.path.mkdir(parents=True, exist_ok=True)
    if Path(state.config).suffix in (".yaml", ".yml"):
        resolved = sdir.path / CONFIG_FILE  # the config with its base: chain, for every host
        data = load_preset_dict(state.config)
        if trainer_name(state.config) != BUILTIN_TRAINER:  # its program runs where the config was
            data.setdefault("workdir", str(Path(state.config).resolve().parent))
        atomic_write_text(resolved, yaml.safe_dump(data, sort_keys=False))
        state.config = str(resolved.resolve())
    sdir.save(state)
    if on_start:
        on_start(sdir)


def resume_sweep(path: str | Path, echo: Callable[[str], None] = print, *,
                 poll: float | None = None, stall_timeout: float | None = None,
                 retries: int | None = None, notify: str | None = None,
                 on_start: Callable[[SweepDir], None] | None = None,
                 rerun: tuple[str, ...] = ()) -> Engine:
    """Continue the sweep in ``path``: re-attach, skip what ended, run the rest; with ``rerun``
    (states, imf/sweep/rerun.py) its trials that ended so run again as new attempts."""
    sdir = SweepDir(path)
    state = sdir.load()
    if on_start:
        on_start(sdir)
    for queue in state.queues:  # every queue gets another chance
        queue.state, queue.reason = "live", ""
    if poll is not None:
        state.poll = _positive(poll, "--poll")
    if stall_timeout is not None:
        state.stall_timeout = _positive(stall_timeout, "--stall-timeout")
    if retries is not None:
        state.retries = int(_positive(retries, "--retries", True))
    state.notify = notify or state.notify
    engine = Engine(sdir, state, echo)
    if rerun:  # marked and logged under the controller's lock
        engine.run(Rerun(engine, rerun))
        return engine
    sdir.log(f"resume by pid {os.getpid()}")
    engine.run()
    return engine
