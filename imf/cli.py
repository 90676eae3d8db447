"""The ``imf`` command line: parses, calls the library, prints. Nothing else.

Every ``ImfError`` becomes one line on stderr and exit code 2.
"""
from __future__ import annotations

import json
import sys

import typer

from imf import registry
from imf.errors import ImfError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="One-step iMF policies on PushT: trials, sweeps, reports.")


@app.callback()
def _root() -> None:
    """One-step iMF policies on PushT: trials, sweeps, reports."""


@app.command()
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
            line = f"  {i.name:<16} {i.dist} {i.version}"
            if i.broken:
                line += f"  BROKEN: {i.error}"
            typer.echo(line)


def main() -> None:
    try:
        app()  # standalone: click prints usage errors itself and exits with 2
    except ImfError as exc:
        typer.echo(f"imf: error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("imf: interrupted", err=True)
        sys.exit(130)
