"""What `imf report` does between parsing and printing: one sweep's report, or two compared."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from imf import report as report_lib


def report_command(paths: list[Path], *, out: Path | None, as_json: bool, compare: bool | None,
                   last_k: int) -> None:
    """Write the report (or the comparison of two sweeps) and print it."""
    paths = list(paths) or [Path(".")]
    target = out or report_lib.default_out(paths)
    if report_lib.is_comparison(paths, compare):
        comparison = report_lib.build_comparison(paths[0], paths[1], last_k)
        written = report_lib.write_compare_files(comparison, target) if target else []
        notes = []  # the comparison's notes are part of its text
        data, text = comparison.to_dict(), report_lib.render_compare_text(comparison)
    else:
        built = report_lib.build_report(paths, last_k)
        written = report_lib.write_files(built, target) if target else []
        notes = built.notices
        data, text = built.to_dict(), report_lib.render_text(built)
    for note in notes + ([] if target else [report_lib.IN_RUN_FOLDER]):
        typer.echo(f"imf: note: {note}", err=True)
    typer.echo(json.dumps(data, indent=2) if as_json else text, nl=as_json)
    if written:
        typer.echo(f"wrote {', '.join(str(p) for p in written)}", err=as_json)
