"""The Typer app every command module registers on, and its root options."""
from __future__ import annotations

import typer

from imf.cli.options import Group, show_version

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, cls=Group,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="One-step iMF policies on PushT: trials, sweeps, reports.")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=show_version, is_eager=True,
                                       help="Print the versions of imf (and its git commit), torch and python.")) -> None:
    """One-step iMF policies on PushT: trials, sweeps, reports."""
