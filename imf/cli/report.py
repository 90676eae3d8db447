"""`imf report` (one sweep's report, or two compared) and `imf suggest`."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from imf import report as report_lib
from imf.cli.app import app
from imf.cli.options import Command


@app.command(cls=Command)
def report(
    paths: list[Path] = typer.Argument(None, help="A sweep folder, or run folders, or two sweep folders A B to compare (default: the current folder)."),
    out: Path = typer.Option(None, "--out", help="Folder for the report files (default: the one folder reported; B of two sweeps A B compared; none for several folders or a run folder)."),
    as_json: bool = typer.Option(False, "--json", help="Print report.json (compare.json) to stdout instead of the tables."),
    compare: bool = typer.Option(None, "--compare/--no-compare", help="Compare two sweeps A B cell by cell (B - A); by default two sweep folders are compared, --no-compare reports them as one."),
    last_k: int = typer.Option(3, "--last-k", help="Rollouts averaged by the last-K score."),
    x_axis: str = typer.Option(None, "--x", help="curves.png's x-axis: epoch, steps, samples or minutes (default: minutes under a time budget, else steps)."),
    rank_by: str = typer.Option(None, "--rank-by", help="The score that ranks the trials and that cells, trends and the best cell average: max, last-k or selection (default: selection where every scored trial has a final_eval.json, else max)."),
) -> None:
    """Rank trials by the selection-seed score (else max test_mean_score) ± SE with robust scores; cells over seeds; trends; heatmap and curves; compare two sweeps. Reads Diffusion Policy runs too."""
    report_command(paths or [], out=out, as_json=as_json, compare=compare, last_k=last_k, x_axis=x_axis,
                   rank_by=rank_by)


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


def report_command(paths: list[Path], *, out: Path | None, as_json: bool, compare: bool | None,
                   last_k: int, x_axis: str | None = None, rank_by: str | None = None) -> None:
    """Write the report (or the comparison of two sweeps) and print it."""
    paths = list(paths) or [Path(".")]
    comparing = report_lib.is_comparison(paths, compare)
    target = out or report_lib.default_out(paths, comparing)
    if comparing:
        comparison = report_lib.build_comparison(paths[0], paths[1], last_k, rank_by)
        written = report_lib.write_compare_files(comparison, target) if target else []
        notes = []  # the comparison's notes are part of its text
        data, text = comparison.to_dict(), report_lib.render_compare_text(comparison)
    else:
        built = report_lib.build_report(paths, last_k, x_axis, rank_by)
        written = report_lib.write_files(built, target) if target else []
        notes = built.notices
        data, text = built.to_dict(), report_lib.render_text(built)
    for note in notes + ([] if target else [report_lib.not_written_note(paths, comparing)]):
        typer.echo(f"imf: note: {note}", err=True)
    typer.echo(json.dumps(data, indent=2) if as_json else text, nl=as_json)
    if written:
        typer.echo(f"wrote {', '.join(str(p) for p in written)}", err=as_json)
