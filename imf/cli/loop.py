"""`imf loop`: suggest -> sweep -> conclude, round after round (imf/loop/)."""
from __future__ import annotations

from pathlib import Path

import typer

from imf.cli.app import app
from imf.cli.options import Command, complete_queue
from imf.errors import LoopError


@app.command(cls=Command)
def loop(
    folder: Path = typer.Argument(None, help="A sweep folder or a folder of runs with scored trials; each round's runs go into FOLDER/loop-rNN."),
    rounds: int = typer.Option(None, "--rounds", help="Rounds at most (suggest -> run -> conclude)."),
    queue: list[str] = typer.Option(None, "--queue", help="A slot for the rounds' trials, as for imf sweep; repeatable (default: local GPUs, else local:cpu).",
                                    autocompletion=complete_queue),
    hosts: Path = typer.Option(None, "--hosts", help="Hosts YAML, as for imf sweep."),
    hours: float = typer.Option(None, "--hours", help="Start no round after this many hours since the loop began."),
    per_round: int = typer.Option(3, "--per-round", help="Proposals run per round (the top K of imf suggest)."),
    final_eval: int = typer.Option(None, "--final-eval", help="Re-score each run's best.pt (or its eval.final_checkpoint) on N selection seeds (imf trial --final-eval)."),
    resume: Path = typer.Option(None, "--resume", help="Continue the loop in this folder: finish its open round, then go on."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the next round's proposals and commands; run nothing."),
) -> None:
    """Close the loop: each round runs the top proposals of imf suggest as a sweep, then writes each one's result and conclusion to ITERATION_LOG.md."""
    from imf.loop import LoopRequest, resume_loop, start_loop
    from imf.loop import dry_run as round_text  # not the --dry-run flag

    if resume is not None:
        given = {"FOLDER": folder, "--rounds": rounds is not None, "--queue": queue, "--hosts": hosts,
                 "--hours": hours is not None, "--final-eval": final_eval is not None}
        if any(given.values()):
            raise LoopError(f"--resume continues a loop as it was started; drop "
                            f"{', '.join(k for k, v in given.items() if v)}")
        if dry_run:  # the round it would go on with, nothing run
            typer.echo(round_text(resume, [], per_round))
        else:
            resume_loop(resume, typer.echo)
        return
    if folder is None:
        raise LoopError("give the folder of the loop (a sweep folder or a folder of runs), or --resume FOLDER")
    if dry_run:
        typer.echo(round_text(folder, list(queue or []), per_round, str(hosts) if hosts else None))
        return
    if rounds is None:
        raise LoopError("--rounds N is required (the most rounds the loop runs)")
    req = LoopRequest(folder, list(queue or []), rounds, per_round, hours,
                      str(hosts) if hosts else None, final_eval)
    start_loop(req, typer.echo)
