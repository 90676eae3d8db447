"""`imf sweep` (start, resume, cancel, dry-run) and `imf status`."""
from __future__ import annotations

import sys
from pathlib import Path

import typer

from imf.cli.app import app
from imf.cli.options import Command, complete_config_args, complete_mask, complete_queue, complete_tracker
from imf.cli.trial import refuse_flags
from imf.config import (DEFAULT_PRESET, FULL_ATTENTION_PRESET, FULL_MASK, RECOMMENDED_EPISODES, mask_preset,
                        split_config_args)
from imf.seeds import SELECTION


@app.command(cls=Command, context_settings={"allow_extra_args": False})
def sweep(
    args: list[str] = typer.Argument(None, help=f"CONFIG (preset or YAML path; default {DEFAULT_PRESET}, or {FULL_ATTENTION_PRESET} with --mask {FULL_MASK}), then key=value overrides for every trial.",
                                     autocompletion=complete_config_args),
    mask: str = typer.Option(None, "--mask", help=f"Attention mask of every trial (an imf.masks plugin, e.g. {FULL_MASK}).",
                             autocompletion=complete_mask),
    grid: list[str] = typer.Option(None, "--grid", help="N_EMB,..xN_LAYER,.. (e.g. 128,256,384x6,12,18) or key=v1,v2; repeatable, multiplied."),
    queue: list[str] = typer.Option(None, "--queue", help="A slot: local:N, local:cpu, ssh://\\[user@]host\\[:port]/gpu:N, or N slots of slurm://PARTITION?slots=N&gpus=..; repeatable (default: local GPUs, else local:cpu).",
                                   autocompletion=complete_queue),
    hosts: Path = typer.Option(None, "--hosts", help="Hosts YAML: per-host workdir, python, ssh_options, speed; may list the queues."),
    name: str = typer.Option(None, "--name", help="Sweep name: the folder under --out and the trial ids' prefix (default 'sweep')."),
    out: Path = typer.Option(Path("runs"), "--out", help="Folder that holds sweep folders."),
    epochs: int = typer.Option(None, "--epochs", help="Epochs of every trial (training.num_epochs)."),
    seed: int = typer.Option(None, "--seed", help="Seed of every trial (default training.seed, 42)."),
    seeds: str = typer.Option(None, "--seeds", help="Run every grid point once per seed, e.g. 42,43,44 (each seed its own trial, id ...-s<seed>)."),
    final_eval: int = typer.Option(None, "--final-eval", help=f"After training, re-score each trial's best.pt (or its eval.final_checkpoint) on N selection episodes (seeds {SELECTION.text}; {RECOMMENDED_EPISODES} recommended) into final_eval.json."),
    retries: int = typer.Option(None, "--retries", help="Retries of a failed or stalled trial (default 1)."),
    stall_timeout: float = typer.Option(None, "--stall-timeout", help="Seconds without log or stdout growth before a trial is stalled (default 1800)."),
    poll: float = typer.Option(None, "--poll", help="Seconds between polls of the running trials (default 5)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the queues, the order and estimated finish on each, and every trial's command; load every plugin the plan uses; run nothing."),
    resume: Path = typer.Option(None, "--resume", help="Continue the sweep in this folder (re-attach, skip ended trials)."),
    rerun: str = typer.Option(None, "--rerun", help="With the sweep folder (imf sweep --rerun failed DIR): run again its trials that ended failed, diverged or stalled (comma-separated), as new attempts in the same sweep."),
    cancel: Path = typer.Option(None, "--cancel", help="Cancel the live jobs of the sweep in this folder on every queue (its controller is stopped first)."),
    notify: str = typer.Option(None, "--notify", help="Command run with the report's path when the sweep ends."),
    halving: int = typer.Option(None, "--halving", help="Successive halving: at each --rungs epoch keep the top 1/ETA (ETA >= 2); a trial below them by more than 1.96 SE of the difference is stopped, a tie never."),
    rungs: str = typer.Option(None, "--rungs", help="Epochs (counted from 1, strictly increasing, e.g. 2,4,8) at which --halving compares the trials."),
    estimate: bool = typer.Option(False, "--estimate", help="With --dry-run: each trial's training time from a few steps measured on this machine (the smallest and the largest trial), and the makespan."),
    min_queues: int = typer.Option(None, "--min-queues", help="Start only when at least N queues pass their check (imf imports on the host, the GPU is there); default: every queue named."),
    tracker: list[str] = typer.Option(None, "--tracker", help="Tracker of every trial (an imf.trackers plugin: swanlab, tensorboard, wandb; none); repeatable.", autocompletion=complete_tracker),
) -> None:
    """Run a grid of trials on GPU queues (local, SSH or Slurm), watch them, recover, then report."""
    from imf.sweep import SweepRequest, parse_seeds
    from imf.sweep import dry_run as plan_text  # not the --dry-run flag
    fixed = {"CONFIG/overrides": args, "--mask": mask, "--grid": grid, "--queue": queue, "--hosts": hosts,
             "--name": name, "--dry-run": dry_run, "--seeds": seeds, "--tracker": tracker,
             **{flag: value is not None for flag, value in (("--epochs", epochs), ("--seed", seed),
                ("--final-eval", final_eval), ("--halving", halving), ("--min-queues", min_queues))},
             "--rungs": rungs}
    try:
        settings = dict(retries=retries, notify=notify, stall_timeout=stall_timeout, poll=poll)
        if cancel is not None or rerun is not None or resume is not None:
            return _of_folder(cancel, rerun, resume, args, fixed, settings)
        preset, items = split_config_args(list(args or []) + ([f"logging.trackers={','.join(tracker)}"] if tracker else []))
        config = preset or mask_preset(mask)
        request = SweepRequest(
            config=config, grids=grid or [], queues=queue or [], hosts=str(hosts) if hosts else None,
            name=name, out=out, epochs=epochs, seed=seed, mask=mask, retries=retries,
            stall_timeout=stall_timeout, poll=poll, notify=notify, overrides=items,
            seeds=parse_seeds(seeds) if seeds is not None else None, final_eval=final_eval,
            halving=halving, rungs=rungs, min_queues=min_queues)
        if dry_run or estimate:
            refuse_flags({"--estimate": not dry_run}, "--estimate times the plan's trials for --dry-run")
            return typer.echo(plan_text(request, estimate))
        _start(request)
    except KeyboardInterrupt:
        typer.echo("imf: interrupted; running trials go on; continue with imf sweep --resume DIR", err=True)
        raise typer.Exit(130)


def _of_folder(cancel: Path | None, rerun: str | None, resume: Path | None, args: list[str] | None,
               fixed: dict[str, object], settings: dict[str, object]) -> None:
    """``--cancel DIR``, ``--rerun STATES DIR`` or ``--resume DIR``: a sweep folder's commands."""
    if cancel is not None:
        given = {f"--{k.replace('_', '-')}": v is not None for k, v in settings.items()}
        _cancel(cancel, {**fixed, "--resume": resume, **given, "--rerun": rerun})
    elif rerun is not None:
        _rerun(rerun, args, resume, {k: v for k, v in fixed.items() if k != "CONFIG/overrides"}, **settings)
    else:
        refuse_flags(fixed, "--resume continues a sweep as it was planned")
        _resume(resume, **settings)


def _rerun(value: str, args: list[str] | None, resume: Path | None, flags: dict[str, object],
           **settings) -> None:
    """``--rerun STATES DIR`` (or ``--rerun STATES --resume DIR``): the folder, one only."""
    from imf.errors import SweepError
    from imf.sweep import parse_rerun
    states = parse_rerun(value)
    folders = [Path(a) for a in args or []] + ([resume] if resume is not None else [])
    if len(folders) != 1:
        raise SweepError(f"--rerun {value} takes one sweep folder (imf sweep --rerun {value} DIR), "
                         f"got {len(folders)}: {' '.join(map(str, folders)) or 'none'}")
    refuse_flags(flags, "--rerun runs a sweep's trials again as they were planned")
    _resume(folders[0], rerun=states, **settings)


def _cancel(folder: Path, flags: dict[str, object]) -> None:
    """``--cancel DIR``, which takes no other sweep flag (``flags``: those given or not)."""
    refuse_flags(flags, "--cancel DIR takes no other sweep arguments")
    from imf.sweep import cancel_sweep
    cancel_sweep(folder, typer.echo)


@app.command(cls=Command)
def status(
    folder: Path = typer.Argument(Path("runs"), help="A sweep folder, or a folder of sweeps (the latest is shown)."),
    watch: bool = typer.Option(False, "--watch", help="Refresh until the sweep ends (in place on a terminal; printed again otherwise)."),
    interval: float = typer.Option(5.0, "--interval", help="Seconds between refreshes with --watch."),
) -> None:
    """A table of a sweep's trials: queue, state, epoch/total, last and best score, elapsed, ETA."""
    from rich.console import Console
    from imf.sweep import find_sweep, render_status, status_view
    console = Console() if sys.stdout.isatty() else None
    if watch:
        from imf.sweep import watch
        watch(folder, interval, typer.echo, console=console)
        return
    sdir = find_sweep(folder)
    if console is not None:
        console.print(status_view(sdir, bars=True))
        return
    typer.echo(render_status(sdir))


def _start(request) -> None:
    from imf.sweep import start_sweep, sweep_view
    with sweep_view(sys.stdout.isatty()) as (echo, on_start):
        engine = start_sweep(request, echo, on_start=on_start)
    _exit_for(engine.state, Path(request.out) / engine.state.name)


def _resume(folder: Path, **settings) -> None:
    from imf.sweep import resume_sweep, sweep_view
    with sweep_view(sys.stdout.isatty()) as (echo, on_start):
        engine = resume_sweep(folder, echo, on_start=on_start, **settings)
    _exit_for(engine.state, folder)


def _exit_for(state, folder: Path) -> None:
    """Exit 1 (one line on stderr) when a finished sweep has trials that failed or stalled, or
    queues that went down on the way: automation must not read such a sweep as a success."""
    bad = [t.id for t in state.trials if t.state in ("failed", "stalled")]
    down = [f"{q.name} ({q.reason})" for q in state.queues if q.state != "live"]
    if bad:
        typer.echo(f"imf: sweep {state.name} finished with {len(bad)} trial(s) failed or stalled "
                   f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''})"
                   + (f"; queues down: {', '.join(down)}" if down else "")
                   + f"; their logs: {folder}/<trial>/stdout.log", err=True)
        raise typer.Exit(1)
    if down:
        typer.echo(f"imf: sweep {state.name} finished on fewer queues; down: {', '.join(down)}", err=True)
