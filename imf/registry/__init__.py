"""Plugin groups and their discovery by entry point.

Built-in plugins are entry points of the imf distribution itself, so they are
found exactly like a third-party package's. A plugin that fails to import is
remembered as broken and reported; it never breaks lookups of other names.

``IMF_PLUGINS`` restricts third-party plugins: a comma-separated list of
distribution names whose plugins may load (imf's own always load); set it to
an empty string to load built-ins only.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from imf.errors import PluginError, UnknownPluginError

GROUPS = ("imf.masks", "imf.objectives", "imf.schedulers", "imf.stores")
BUILTIN_DIST = "imf"


@dataclass
class PluginInfo:
    group: str
    name: str
    value: str  # "module:attr" as declared
    dist: str
    version: str
    error: str | None = None  # set when importing the plugin failed

    @property
    def broken(self) -> bool:
        return self.error is not None

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "name": self.name, "value": self.value, "dist": self.dist,
                "version": self.version, "status": "broken" if self.broken else "ok",
                "error": self.error}


def _allowed(dist: str) -> bool:
    spec = os.environ.get("IMF_PLUGINS")
    if dist == BUILTIN_DIST or spec is None:
        return True
    return dist in {d.strip() for d in spec.split(",") if d.strip()}


def _entry_points(group: str) -> list[tuple[metadata.EntryPoint, str, str]]:
    found: dict[str, tuple[metadata.EntryPoint, str, str]] = {}
    for ep in metadata.entry_points(group=group):
        dist = ep.dist.metadata["Name"] if ep.dist is not None else "?"
        version = ep.dist.version if ep.dist is not None else "?"
        if not _allowed(dist):
            continue
        # imf's own entry point keeps a name a third party also declares.
        if ep.name in found and found[ep.name][1] == BUILTIN_DIST:
            continue
        found[ep.name] = (ep, dist, version)
    return [found[name] for name in sorted(found)]


def _check_group(group: str) -> None:
    if group not in GROUPS:
        raise PluginError(f"unknown plugin group '{group}'; groups: {', '.join(GROUPS)}")


def discover(group: str, load: bool = True) -> list[PluginInfo]:
    """Every plugin of ``group``; with ``load`` each is imported to find the broken ones."""
    _check_group(group)
    infos = []
    for ep, dist, version in _entry_points(group):
        info = PluginInfo(group, ep.name, ep.value, dist, version)
        if load:
            try:
                ep.load()
            except Exception as exc:  # a broken plugin is reported, never fatal
                info.error = f"{type(exc).__name__}: {exc}"
        infos.append(info)
    return infos


def names(group: str) -> list[str]:
    """Names installed in ``group`` (without importing them)."""
    _check_group(group)
    return [ep.name for ep, _, _ in _entry_points(group)]


def get(group: str, name: str) -> Any:
    """The object a plugin's entry point names, or a one-line typed error."""
    _check_group(group)
    for ep, dist, _ in _entry_points(group):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin '{name}' in {group} (from {dist}) failed to load: "
                    f"{type(exc).__name__}: {exc}") from None
    installed = ", ".join(names(group)) or "none"
    kind = group.split(".", 1)[1].rstrip("s")
    raise UnknownPluginError(f"unknown {kind} '{name}' in {group}; installed: {installed}")


def check(group: str, name: str) -> None:
    """Raise the same error ``get`` would, without keeping the object."""
    get(group, name)
