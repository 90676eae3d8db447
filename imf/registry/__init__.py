"""Plugin groups and their discovery by entry point.

Built-in plugins are entry points of the imf distribution itself, so they are
found exactly like a third-party package's. A plugin that fails to import is
remembered as broken and reported; it never breaks lookups of other names.

``IMF_PLUGINS`` restricts third-party plugins: a comma-separated list of
distribution names whose plugins may load (imf's own always load), compared as
packaging does (PEP 503: case, ``-``, ``_`` and ``.`` do not matter); set it to
an empty string to load built-ins only. An unknown name whose plugin it leaves
out says so. Two plugins of one name: imf's own wins, else the first
distribution by name; the other is listed as shadowed, never used.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from imf.errors import PluginError, UnknownPluginError
from imf.faces import lazy_names

GROUPS = ("imf.curricula", "imf.masks", "imf.objectives", "imf.schedulers", "imf.stores", "imf.trackers",
          "imf.trainers")
BUILTIN_DIST = "imf"

# The registry's face: these names, and those of its plugin-option, mask and contract modules, which
# load on first use (PEP 562 ``__getattr__`` below) since they import the config and numpy;
# "module:name" where the face renames it.
_LAZY = {"as_dict": "options", "fill_options": "options", "plugin_and_options": "options",
         "resolve_options": "options:resolve", "N_TIME_TOKENS": "masks", "call_mask": "masks", "check_masks": "masks",
         "mask_problem": "masks", "resolve_masks": "masks", "check_installed": "contracts", "keeping": "contracts"}
__all__ = ["BUILTIN_DIST", "GROUPS", "PluginInfo", "check", "clear_cache", "discover", "excluded", "get", "kind_of",
           "names", "normalize", "requirements", "unknown", *_LAZY]


__getattr__ = lazy_names(__name__, _LAZY, globals())


@dataclass
class PluginInfo:
    group: str
    name: str
    value: str  # "module:attr" as declared
    dist: str
    version: str
    error: str | None = None  # set when importing the plugin failed
    shadowed_by: str | None = None  # the distribution whose plugin of this name wins instead
    requires: list[str] = field(default_factory=list)  # "dist version" of the packages it needs

    @property
    def broken(self) -> bool:
        return self.error is not None

    @property
    def status(self) -> str:
        return "shadowed" if self.shadowed_by else "broken" if self.broken else "ok"

    @property
    def problem(self) -> str | None:
        if self.shadowed_by:
            owner = "imf's built-in" if self.shadowed_by == BUILTIN_DIST else f"{self.shadowed_by}'s"
            return f"ignored: {owner} '{self.name}' answers to this name"
        return self.error

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "name": self.name, "value": self.value, "dist": self.dist,
                "version": self.version, "status": self.status, "error": self.problem,
                "requires": list(self.requires)}


def normalize(dist: str) -> str:
    """A distribution name as packaging compares them (PEP 503): ``IMF_Window.mask`` -> ``imf-window-mask``."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def _allowed_dists() -> set[str] | None:
    """The normalised names ``IMF_PLUGINS`` allows, or None when it is not set (all allowed)."""
    spec = os.environ.get("IMF_PLUGINS")
    if spec is None:
        return None
    return {normalize(d.strip()) for d in spec.split(",") if d.strip()}


Found = tuple[metadata.EntryPoint, str, str]  # entry point, distribution, version


@dataclass
class _Scan:
    kept: dict[str, Found]  # name -> the entry point that answers to it
    excluded: list[Found]  # third-party ones IMF_PLUGINS leaves out
    shadowed: list[tuple[Found, str]]  # ones another distribution's entry point hides, with it


_INSTALLED: dict[tuple[str, tuple[str, ...]], list[Found]] = {}


def _installed(group: str) -> list[Found]:
    """Every entry point of ``group``: read from the installed metadata once per process (and
    per ``sys.path``, so a folder put on it is seen); ``clear_cache`` forgets them."""
    key = (group, tuple(sys.path))
    if key not in _INSTALLED:
        _INSTALLED[key] = [(ep, ep.dist.metadata["Name"] if ep.dist is not None else "?",
                            ep.dist.version if ep.dist is not None else "?")
                           for ep in metadata.entry_points(group=group)]
    return _INSTALLED[key]


def clear_cache() -> None:
    """Read the installed plugins again on the next lookup (after installing one in-process)."""
    _INSTALLED.clear()


def _scan(group: str) -> _Scan:
    """imf's own entry points first, then third parties by name; the first of a name wins."""
    allowed = _allowed_dists()
    found: list[Found] = []
    scan = _Scan({}, [], [])
    for ep, dist, version in _installed(group):
        if dist != BUILTIN_DIST and allowed is not None and normalize(dist) not in allowed:
            scan.excluded.append((ep, dist, version))
        else:
            found.append((ep, dist, version))
    for entry in sorted(found, key=lambda f: (f[1] != BUILTIN_DIST, normalize(f[1]))):
        holder = scan.kept.setdefault(entry[0].name, entry)
        if holder is not entry:
            scan.shadowed.append((entry, holder[1]))
    return scan


def _entry_points(group: str) -> list[Found]:
    kept = _scan(group).kept
    return [kept[name] for name in sorted(kept)]


def _check_group(group: str) -> None:
    if group not in GROUPS:
        raise PluginError(f"unknown plugin group '{group}'; groups: {', '.join(GROUPS)}")


def excluded(group: str) -> list[tuple[str, str]]:
    """(name, distribution) of each plugin of ``group`` that ``IMF_PLUGINS`` leaves out."""
    _check_group(group)
    return [(ep.name, dist) for ep, dist, _ in _scan(group).excluded]


def discover(group: str, load: bool = True) -> list[PluginInfo]:
    """Every plugin of ``group``; with ``load`` each is imported to find the broken ones."""
    _check_group(group)
    infos = []
    for ep, dist, version in _entry_points(group):
        info = PluginInfo(group, ep.name, ep.value, dist, version)
        if load:
            try:
                info.requires = requirements(ep.load())
            except Exception as exc:  # a broken plugin is reported, never fatal
                info.error = f"{type(exc).__name__}: {exc}"
        infos.append(info)
    for (ep, dist, version), holder in _scan(group).shadowed:
        infos.append(PluginInfo(group, ep.name, ep.value, dist, version,
                                shadowed_by=holder))
    return infos


def requirements(plugin: Any) -> list[str]:
    """"dist version" of each distribution a plugin names in its ``requires`` attribute."""
    found = []
    for dist in getattr(plugin, "requires", ()) or ():
        try:
            found.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            raise PluginError(f"needs {dist}, which is not installed (pip install {dist})") from None
    return found


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
    raise unknown(group, name)


def kind_of(group: str) -> str:
    """What one plugin of ``group`` is called: ``imf.masks`` -> mask, ``imf.curricula`` -> curriculum."""
    plural = group.split(".", 1)[1]
    return plural[:-1] + "um" if plural.endswith("ula") else plural.rstrip("s")


def unknown(group: str, name: str) -> UnknownPluginError:
    """The error for a name nothing answers to: what is installed, and why a plugin of that
    name that is installed does not count."""
    installed = ", ".join(names(group)) or "none"
    kind = kind_of(group)
    why = "".join(f"; '{name}' is provided by {dist}, which IMF_PLUGINS excludes"
                  for ep, dist, _ in _scan(group).excluded if ep.name == name)
    return UnknownPluginError(f"unknown {kind} '{name}' in {group}{why}; installed: {installed}")


def check(group: str, name: str) -> None:
    """Raise the same error ``get`` would, without keeping the object."""
    get(group, name)
