"""Pieces of the command line that are not commands: shell completions, ``--version``, and
command classes that show boolean flags as flags in the help."""
from __future__ import annotations

import typer
from typer.core import TyperCommand, TyperGroup

QUEUE_EXAMPLES = ("local:0", "local:cpu", "ssh://")


def _flags_as_flags(params: list) -> list:
    """Typer's rich help prints ``--resume <bool>`` for a flag; an empty metavar drops the type."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class Command(TyperCommand):
    def get_params(self, ctx: typer.Context) -> list:
        return _flags_as_flags(super().get_params(ctx))


class Group(TyperGroup):
    def get_params(self, ctx: typer.Context) -> list:
        return _flags_as_flags(super().get_params(ctx))


def _matching(candidates, incomplete: str) -> list[str]:
    return [c for c in candidates if c.startswith(incomplete)]


def complete_config_args(ctx: typer.Context, incomplete: str) -> list[str]:
    """The first word is a preset; the words after it are ``key=`` overrides."""
    from imf.config import all_keys, list_presets
    if not ctx.params.get("args"):
        return _matching(list_presets(), incomplete)
    return _matching([f"{key}=" for key in all_keys()], incomplete)


def _plugin_names(group: str) -> list[str]:
    from imf import registry
    return registry.names(group)


def complete_mask(incomplete: str) -> list[str]:
    return _matching(_plugin_names("imf.masks"), incomplete)


def complete_store(incomplete: str) -> list[str]:
    return _matching([*_plugin_names("imf.stores"), "none"], incomplete)


def complete_tracker(incomplete: str) -> list[str]:
    return _matching([*_plugin_names("imf.trackers"), "none"], incomplete)


def complete_queue(incomplete: str) -> list[str]:
    """``local:0``, ``local:cpu``, ``ssh://`` and ``<scheme>://`` of third-party schedulers."""
    schemes = [f"{name}://" for name in _plugin_names("imf.schedulers") if name not in ("local", "ssh")]
    return _matching([*QUEUE_EXAMPLES, *schemes], incomplete)


def show_version(value: bool) -> None:
    if value:
        from imf.version import version_text
        typer.echo(version_text())
        raise typer.Exit()
