"""The ``imf`` command line: parses, calls the library, prints. Nothing else.

One module per command group registers its commands on ``app`` (imf/cli/app.py). Every
``ImfError`` becomes one line on stderr and its exit code (2; 75 for a full disk).
"""
from __future__ import annotations

import sys

import typer

from imf.cli.app import app
# Importing a command module registers its commands; this order is the order of `imf --help`.
from imf.cli import plugins, trial, report, loop, ensemble, sweep, log, data  # noqa: F401,E402,I001
from imf.errors import ImfError

__all__ = ["app", "main"]  # nothing of imf imports the CLI; these are its entry points


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
    message = _set_words(ctx) if getattr(exc, "option_name", None) == "--set" else None
    typer.echo(f"imf: error: {message or exc.format_message() + hint}", err=True)
    return int(exc.exit_code)


def _set_words(ctx) -> str:
    """``--set KEY=VALUE`` (another tool's spelling): where a setting, and an axis, go instead."""
    argv = sys.argv[1:]
    given = next((a.partition("=")[2] for a in argv if a.startswith("--set=")), None)
    if given is None and "--set" in argv[:-1]:
        given = argv[argv.index("--set") + 1]
    key, _, values = (given or "").partition("=")
    example = f"{key}={values}" if key and values else "data.demo_episodes=100"
    words = f"no option --set: a setting is a KEY=VALUE word after CONFIG, e.g. {example.split(',')[0]}"
    if ctx is not None and ctx.command.name == "sweep":
        axis = example if "," in example else f"{example.partition('=')[0]}=V1,V2"
        words += f" (for every trial); an axis of the sweep is --grid {axis}"
    return words
