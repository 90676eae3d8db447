"""`imf log hypothesis|conclude`: entries of ITERATION_LOG.md."""
from __future__ import annotations

from pathlib import Path

import typer

from imf.cli.app import app
from imf.cli.options import Command, Group

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
    from imf.store import IterationLogStore
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
    from imf.store import FILENAME, IterationLogStore
    if not (folder / FILENAME).is_file():
        raise StoreError(f"no {FILENAME} in {folder}; add a hypothesis first (imf log hypothesis)")
    block = IterationLogStore(folder).conclude(hypothesis_id, result, conclusion)
    typer.echo(f"concluded {block['id']}")
