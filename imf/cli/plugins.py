"""`imf plugins`: every installed plugin by group."""
from __future__ import annotations

import json

import typer

from imf import registry
from imf.cli.app import app
from imf.cli.options import Command
from imf.errors import PluginError
from imf.registry import check_installed, keeping


@app.command(cls=Command)
def plugins(as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
            check: bool = typer.Option(False, "--check", help="Check every installed plugin against its group's contract, and run every mask and objective at the shapes of every installed preset (CPU, a tiny model); fail with one line naming those that break it.")) -> None:
    """List every plugin by group, with the package that provides it; broken ones with their error."""
    if check:
        _check()
        return
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


def _check() -> None:
    from imf.train import check_shapes  # torch: only for --check
    problems = [line for group in registry.GROUPS for line in check_installed(group)]
    shapes = check_shapes(keeping("imf.masks"), keeping("imf.objectives"))
    problems += shapes.problems
    if problems:
        raise PluginError("; ".join(problems))
    count = sum(len(registry.names(group)) for group in registry.GROUPS)
    typer.echo(shapes.summary())
    typer.echo(f"{count} plugins in {len(registry.GROUPS)} groups keep their group's contract")
