"""`imf data demo|info`: scripted demonstrations and replay-buffer zarr stores."""
from __future__ import annotations

from pathlib import Path

import typer

from imf.cli.app import app
from imf.cli.options import Command, Group

data_app = typer.Typer(no_args_is_help=True, cls=Group, help="Scripted demonstrations and replay-buffer zarr stores.")
app.add_typer(data_app, name="data")


@data_app.command(cls=Command, name="demo")
def data_demo(
    episodes: int = typer.Option(..., "--episodes", min=1, help="Successful expert episodes to record."),
    out: Path = typer.Option(..., "--out", help="Output replay-buffer store (a .zarr directory)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the episode seeds (same seed, same data)."),
    noise: float = typer.Option(0.0, "--noise", help="World units (standard deviation) added to each "
                                "executed expert target; the recorded action stays the expert's (0: none)."),
    finish: float = typer.Option(None, "--finish", help="A coverage the expert pushes on to "
                                 "after success (at most 40 more steps; default: it stops at success)."),
    pace: float = typer.Option(1.0, "--pace", help="A factor on the expert's push speed and "
                               "target step: the same plans in fewer control steps (default 1: its own)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing store at --out."),
) -> None:
    """Record scripted-expert PushT demonstrations in the reference replay-buffer layout; the
    first episodes of a cached set of the same seed ($IMF_CACHE or ~/.cache/imf) are the same
    data, so they are copied when one is there. With --noise the expert's executed targets are
    perturbed and its own targets recorded: states off its path, labelled with where it steers;
    with --finish it pushes on after success; with --pace it moves faster (or slower)."""
    from rich.progress import Progress
    from imf.errors import DataError
    from imf.data import prepare_output
    from imf.pusht import DemoRecipe, check_recipe, copy_from_cache, make_demo_dataset
    # the recipe's own ranges, named by the flag, before anything is written
    check_recipe({"noise": noise, "finish": finish, "pace": pace}, lambda name: f"--{name}")
    recipe = DemoRecipe(noise, finish, pace)
    if out.exists() and not force:
        raise DataError(f"--out {out} exists; pass --force to replace it")
    prepare_output(out)  # a bad --out fails before the progress bar
    source = copy_from_cache(out, episodes, seed, recipe=recipe)
    if source is not None:
        typer.echo(f"wrote {episodes} episodes to {out}: the first {episodes} of the cached {source} "
                   f"(the same episode seeds, so the same data)")
        return
    failed = 0
    with Progress(transient=False) as bar:
        task = bar.add_task("expert episodes", total=episodes)

        def advance(episode) -> None:
            nonlocal failed
            failed += not episode.success
            bar.update(task, advance=episode.success,
                       description=f"expert episodes ({failed} failed, skipped)")
        path = make_demo_dataset(out, episodes, seed, progress=advance, recipe=recipe)
    typer.echo(f"wrote {episodes} episodes to {path}")


@data_app.command(cls=Command, name="info")
def data_info(path: Path = typer.Argument(..., help="A replay-buffer zarr store (directory or zip).")) -> None:
    """Episodes, steps and lengths, then every stored array: shape, dtype, chunks, compressor, and how imf reads it."""
    from imf.data import describe_store
    typer.echo(describe_store(path))
