"""`imf ensemble`: a top-K ensemble of a run's checkpoints or a sweep's runs, scored on selection
seeds and recorded in the scoreboard (the library, and torch, are imported when it runs)."""
from __future__ import annotations

from pathlib import Path

import typer

from imf.cli.app import app
from imf.cli.options import Command
from imf.seeds import SELECTION


@app.command(cls=Command)
def ensemble(
    source: Path = typer.Argument(..., help="A run folder (its top-k checkpoints) or a sweep folder (its runs' best checkpoints)."),
    top: int = typer.Option(..., "--top", help="Number of members K (2 or more): the K best by test_mean_score."),
    mode: str = typer.Option(..., "--mode", help="weights: one model, the uniform mean of the members' EMA weights; actions: the members' action chunks averaged at each step."),
    out: Path = typer.Option(None, "--out", help="The ensemble checkpoint (.pt) to write (default <runs>/ensembles/<id>.pt beside the scoreboard)."),
    final_eval: int = typer.Option(200, "--final-eval", help=f"Fresh episodes to score it on (final_eval's seeds {SELECTION.text})."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda or cuda:N."),
) -> None:
    """A top-K ensemble (weight soup or action average) as a checkpoint imf eval scores; scored on selection seeds and recorded as an ensemble entry."""
    from imf.ensemble import make_ensemble

    make_ensemble(source, top, mode, out=out, final_eval=final_eval, device=device, echo=typer.echo)
