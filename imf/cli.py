"""The ``imf`` command line: parses, calls the library, prints. Nothing else.

Every ``ImfError`` becomes one line on stderr and its exit code (2; 75 for a full disk).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from imf import registry
from imf.cli_options import (Command, Group, complete_config_args, complete_mask, complete_queue,
                             complete_store, complete_tracker, show_version)
from imf.config import split_config_args
from imf.errors import ImfError

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, cls=Group,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="One-step iMF policies on PushT: trials, sweeps, reports.")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=show_version, is_eager=True,
                                       help="Print the versions of imf (and its git commit), torch and python.")) -> None:
    """One-step iMF policies on PushT: trials, sweeps, reports."""


@app.command(cls=Command)
def plugins(as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts.")) -> None:
    """List every plugin by group, with the package that provides it; broken ones with their error."""
    infos = [info for group in registry.GROUPS for info in registry.discover(group)]
    if as_json:
        typer.echo(json.dumps([i.as_dict() for i in infos], indent=2))
        return
    for group in registry.GROUPS:
        typer.echo(f"{group}:")
        members = [i for i in infos if i.group == group]
        if not members:
            typer.echo("  (none)")
        for i in members:
            line = f"  {i.name:<16} {i.dist} {i.version}" + (f"  needs {', '.join(i.requires)}"
                                                            if i.requires else "")
            if i.status != "ok":
                line += f"  {i.status.upper()}: {i.problem}"
            typer.echo(line)
        for name, dist in registry.excluded(group):
            typer.echo(f"  {name:<16} {dist}  EXCLUDED by IMF_PLUGINS")


@app.command(cls=Command, context_settings={"allow_extra_args": False})
def trial(
    args: list[str] = typer.Argument(None, help="CONFIG (a preset or YAML path), then key=value dotted overrides.",
                                     autocompletion=complete_config_args),
    trial_id: str = typer.Option(None, "--id", help="Trial id (default <config>-<mask>-e<n_emb>-l<n_layer>-s<seed>)."),
    out: Path = typer.Option(None, "--out", help="The trial's run folder (default runs/<id>)."),
    seed: int = typer.Option(None, "--seed", help="Seed for torch, numpy and random (training.seed)."),
    epochs: int = typer.Option(None, "--epochs", help="Number of epochs (training.num_epochs)."),
    init_from: Path = typer.Option(None, "--init-from", help="Warm start from this checkpoint (strict=False)."),
    patience: int = typer.Option(None, "--patience", help="Stop after N rollouts without a new best."),
    note: str = typer.Option("", "--note", help="A note kept in the summary and the result stores."),
    overrides: str = typer.Option(None, "--overrides", help="JSON object deep-merged into the config."),
    device: str = typer.Option(None, "--device", help="auto, cpu, cuda or cuda:N (training.device)."),
    store: list[str] = typer.Option(None, "--store", help="Result store to record in (repeatable); 'none' for none.",
                                   autocompletion=complete_store),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its latest.pt."),
    final_eval: int = typer.Option(None, "--final-eval", help="After training, re-score best.pt on N fresh episodes (seeds 500000..; 200 recommended) into final_eval.json."),
) -> None:
    """One run: config + overrides -> train -> score in the simulator -> checkpoints, logs, stores."""
    from imf.cli_support import trial_command
    trial_command(args or [], trial_id=trial_id, out=out, seed=seed, epochs=epochs, init_from=init_from,
                  patience=patience, note=note, overrides=overrides, device=device, stores=store,
                  resume=resume, final_eval=final_eval)


@app.command("eval", cls=Command)
def eval_(
    checkpoint: Path = typer.Argument(None, help="A checkpoint (.pt) to score."),
    best: Path = typer.Option(None, "--best", help="Score the best checkpoint of the scoreboard in this folder."),
    n_test: int = typer.Option(None, "--n-test", help="Number of test episodes (default: the checkpoint's eval.n_test)."),
    start_seed: int = typer.Option(None, "--start-seed", help="First test seed (default 100000)."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda or cuda:N."),
    workers: int = typer.Option(None, "--workers", help="Simulator worker processes (default: the config's)."),
    noise_seed: int = typer.Option(None, "--noise-seed", help="Seed of the sampling noise (default: the trial's training.seed, as in its rollouts)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Score a checkpoint on the test seeds: test_mean_score, success rate, per-seed scores."""
    from imf.cli_support import eval_command
    eval_command(checkpoint, best=best, n_test=n_test, start_seed=start_seed, device=device,
                 workers=workers, as_json=as_json, noise_seed=noise_seed)


@app.command(cls=Command)
def report(
    paths: list[Path] = typer.Argument(None, help="A sweep folder, or run folders, or two sweep folders A B to compare (default: the current folder)."),
    out: Path = typer.Option(None, "--out", help="Folder for the report files (default: the folder of one imf sweep, else the current folder)."),
    as_json: bool = typer.Option(False, "--json", help="Print report.json (compare.json) to stdout instead of the tables."),
    compare: bool = typer.Option(None, "--compare/--no-compare", help="Compare two sweeps A B cell by cell (B - A); by default two sweep folders are compared, --no-compare reports them as one."),
    last_k: int = typer.Option(3, "--last-k", help="Rollouts averaged by the last-K score."),
) -> None:
    """Rank trials by max test_mean_score ± SE with robust scores; cells over seeds; trends; heatmap and curves; compare two sweeps. Reads Diffusion Policy runs too."""
    from imf.cli_report import report_command
    report_command(paths or [], out=out, as_json=as_json, compare=compare, last_k=last_k)


@app.command(cls=Command)
def suggest(
    folder: Path = typer.Argument(Path("."), help="A sweep folder or a folder of runs (default: the current folder)."),
    write_hypothesis: bool = typer.Option(False, "--write-hypothesis", help="Append a pre-filled hypothesis block with the proposals to ITERATION_LOG.md in the folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the proposals as a JSON list for scripts."),
) -> None:
    """Propose the next runs: more seeds for ties with the best, the best cell's neighbours, a warm-start continuation."""
    from imf import suggest as suggest_lib
    found = suggest_lib.suggest(folder)
    block = suggest_lib.write_hypothesis(found) if write_hypothesis else None
    typer.echo(json.dumps(suggest_lib.as_json(found), indent=2) if as_json
               else suggest_lib.render_text(found), nl=as_json)
    if block:
        typer.echo(f"wrote hypothesis {block} to {found.folder / 'ITERATION_LOG.md'}", err=as_json)


@app.command(cls=Command, context_settings={"allow_extra_args": False})
def sweep(
    args: list[str] = typer.Argument(None, help="CONFIG (preset or YAML path; default pusht_image_imf, or pusht_image_imf_fullattn with --mask full), then key=value overrides for every trial.",
                                     autocompletion=complete_config_args),
    mask: str = typer.Option(None, "--mask", help="Attention mask of every trial (an imf.masks plugin, e.g. full).",
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
    final_eval: int = typer.Option(None, "--final-eval", help="After training, re-score each trial's best.pt on N fresh episodes (seeds 500000..; 200 recommended) into final_eval.json."),
    retries: int = typer.Option(None, "--retries", help="Retries of a failed or stalled trial (default 1)."),
    stall_timeout: float = typer.Option(None, "--stall-timeout", help="Seconds without log or stdout growth before a trial is stalled (default 1800)."),
    poll: float = typer.Option(None, "--poll", help="Seconds between polls of the running trials (default 5)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the queues, the order and estimated finish on each, and every trial's command; load every plugin the plan uses; run nothing."),
    resume: Path = typer.Option(None, "--resume", help="Continue the sweep in this folder (re-attach, skip ended trials)."),
    cancel: Path = typer.Option(None, "--cancel", help="Cancel the live jobs of the sweep in this folder on every queue (its controller is stopped first)."),
    notify: str = typer.Option(None, "--notify", help="Command run with the report's path when the sweep ends."),
    tracker: list[str] = typer.Option(None, "--tracker", help="Tracker of every trial (an imf.trackers plugin: swanlab, tensorboard, wandb; none); repeatable.", autocompletion=complete_tracker),
) -> None:
    """Run a grid of trials on GPU queues (local, SSH or Slurm), watch them, recover, then report."""
    from imf.cli_support import refuse_flags
    from imf.scheduler import sweep as sweep_lib
    from imf.scheduler.live import sweep_view
    fixed = {"CONFIG/overrides": args, "--mask": mask, "--grid": grid, "--queue": queue, "--hosts": hosts,
             "--name": name, "--epochs": epochs is not None, "--seed": seed is not None, "--dry-run": dry_run,
             "--seeds": seeds, "--final-eval": final_eval is not None, "--tracker": tracker}
    try:
        if cancel is not None:
            tuning = {"--resume": resume, "--retries": retries is not None, "--notify": notify,
                      "--stall-timeout": stall_timeout is not None, "--poll": poll is not None}
            refuse_flags({**fixed, **tuning}, "--cancel DIR takes no other sweep arguments")
            from imf.scheduler.cancel import cancel_sweep
            cancel_sweep(cancel, typer.echo)
            return
        if resume is not None:
            refuse_flags(fixed, "--resume continues a sweep as it was planned")
            with sweep_view(sys.stdout.isatty()) as (echo, on_start):
                sweep_lib.resume_sweep(resume, echo, poll=poll, stall_timeout=stall_timeout,
                                       retries=retries, notify=notify, on_start=on_start)
            return
        preset, items = split_config_args(list(args or []) + ([f"logging.trackers={','.join(tracker)}"] if tracker else []))
        config = preset or sweep_lib.default_config(mask)
        request = sweep_lib.SweepRequest(
            config=config, grids=grid or [], queues=queue or [], hosts=str(hosts) if hosts else None,
            name=name, out=out, epochs=epochs, seed=seed, mask=mask, retries=retries,
            stall_timeout=stall_timeout, poll=poll, notify=notify, overrides=items,
            seeds=sweep_lib.parse_seeds(seeds) if seeds is not None else None, final_eval=final_eval)
        if dry_run:
            typer.echo(sweep_lib.dry_run(request))
            return
        with sweep_view(sys.stdout.isatty()) as (echo, on_start):
            sweep_lib.start_sweep(request, echo, on_start=on_start)
    except KeyboardInterrupt:
        typer.echo("imf: interrupted; running trials go on; continue with imf sweep --resume DIR", err=True)
        raise typer.Exit(130)


@app.command(cls=Command)
def status(
    folder: Path = typer.Argument(Path("runs"), help="A sweep folder, or a folder of sweeps (the latest is shown)."),
    watch: bool = typer.Option(False, "--watch", help="Refresh until the sweep ends (in place on a terminal; printed again otherwise)."),
    interval: float = typer.Option(5.0, "--interval", help="Seconds between refreshes with --watch."),
) -> None:
    """A table of a sweep's trials: queue, state, epoch/total, last and best score, elapsed, ETA."""
    from rich.console import Console
    from imf.scheduler import status as status_lib
    console = Console() if sys.stdout.isatty() else None
    if watch:
        status_lib.watch(folder, interval, typer.echo, console=console)
        return
    sdir = status_lib.find_sweep(folder)
    if console is not None:
        console.print(status_lib.status_view(sdir, bars=True))
        return
    typer.echo(status_lib.render_status(sdir))


log_app = typer.Typer(no_args_is_help=True, cls=Group, help="Hypothesis / result / conclusion entries in ITERATION_LOG.md.")
app.add_typer(log_app, name="log")


@log_app.command(cls=Command, name="hypothesis")
def log_hypothesis(
    text: str = typer.Option(..., "--text", help="The hypothesis."),
    expect: str = typer.Option(..., "--expect", help="What you expect to see if it holds."),
    command: str = typer.Option(None, "--command", help="The command that tests it."),
    folder: Path = typer.Option(Path("."), "--dir", help="Folder holding ITERATION_LOG.md (default: here)."),
) -> None:
    """Add a numbered hypothesis block to ITERATION_LOG.md and print its id (H1, H2, ...)."""
    from imf.errors import StoreError
    from imf.store.iteration_log import IterationLogStore
    if not folder.is_dir():
        raise StoreError(f"--dir {folder} is not an existing folder")
    typer.echo(IterationLogStore(folder).add_hypothesis(text, expect, command))


@log_app.command(cls=Command, name="conclude")
def log_conclude(
    hypothesis_id: str = typer.Argument(..., help="The hypothesis id, e.g. H1."),
    result: str = typer.Option(..., "--result", help="What the run showed."),
    conclusion: str = typer.Option(..., "--conclusion", help="What you conclude from it."),
    folder: Path = typer.Option(Path("."), "--dir", help="Folder holding ITERATION_LOG.md (default: here)."),
) -> None:
    """Fill the result and conclusion of a hypothesis block in ITERATION_LOG.md."""
    from imf.errors import StoreError
    from imf.store.iteration_log import FILENAME, IterationLogStore
    if not (folder / FILENAME).is_file():
        raise StoreError(f"no {FILENAME} in {folder}; add a hypothesis first (imf log hypothesis)")
    block = IterationLogStore(folder).conclude(hypothesis_id, result, conclusion)
    typer.echo(f"concluded {block['id']}")


data_app = typer.Typer(no_args_is_help=True, cls=Group, help="Scripted demonstrations and replay-buffer zarr stores.")
app.add_typer(data_app, name="data")


@data_app.command(cls=Command, name="demo")
def data_demo(
    episodes: int = typer.Option(..., "--episodes", min=1, help="Successful expert episodes to record."),
    out: Path = typer.Option(..., "--out", help="Output replay-buffer store (a .zarr directory)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the episode seeds (same seed, same data)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing store at --out."),
) -> None:
    """Record scripted-expert PushT demonstrations in the reference replay-buffer layout."""
    from rich.progress import Progress
    from imf.errors import DataError
    from imf.data.replay_buffer import prepare_output
    from imf.pusht.expert import make_demo_dataset
    if out.exists() and not force:
        raise DataError(f"--out {out} exists; pass --force to replace it")
    prepare_output(out)  # a bad --out fails before the progress bar
    failed = 0
    with Progress(transient=False) as bar:
        task = bar.add_task("expert episodes", total=episodes)

        def advance(episode) -> None:
            nonlocal failed
            failed += not episode.success
            bar.update(task, advance=episode.success,
                       description=f"expert episodes ({failed} failed, skipped)")
        path = make_demo_dataset(out, episodes, seed, progress=advance)
    typer.echo(f"wrote {episodes} episodes to {path}")


@data_app.command(cls=Command, name="info")
def data_info(path: Path = typer.Argument(..., help="A replay-buffer zarr store (directory or zip).")) -> None:
    """Episodes, steps and lengths, then every stored array: shape, dtype, chunks, compressor, and how imf reads it."""
    from imf.data.store_info import describe_store
    typer.echo(describe_store(path))


def main() -> None:
    try:
        code = app(standalone_mode=False)
    except ImfError as exc:
        typer.echo(f"imf: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("imf: interrupted", err=True)
        sys.exit(130)
    except OSError as exc:  # a path the user gave cannot be read or written
        if exc.filename is None:
            raise
        typer.echo(f"imf: error: {exc.strerror or exc}: {exc.filename}", err=True)
        sys.exit(2)
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        sys.exit(_report_usage_error(exc))
    sys.exit(code if isinstance(code, int) else 0)


def _is_usage_error(exc: Exception) -> bool:
    """Click's usage errors (bad option value, unknown command...), whichever click Typer ships."""
    return hasattr(exc, "format_message") and hasattr(exc, "exit_code")


def _report_usage_error(exc: Exception) -> int:
    """One line on stderr instead of click's usage box; ``imf`` alone still shows the help."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        exc.show()
        return 0
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    typer.echo(f"imf: error: {exc.format_message()}{hint}", err=True)
    return int(exc.exit_code)
