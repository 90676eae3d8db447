"""The one check of a plugin against its group's contract (``imf plugins --check``).

The contracts are the Protocols of imf/contracts.py, one per group, one style: the members (and
``__init__`` or ``__call__``) a plugin must have, with the parameters the callers pass, and the
attributes it must carry (annotated without a value). ``problem`` holds a plugin to one of them:
a plugin need not extend anything, it keeps its contract by its shape.

A plugin that declares ``Options`` (imf/registry/options.py) also takes them as the last argument
of its constructor (of the call, for a function), where the contract does not pass them always.
"""
from __future__ import annotations

import inspect
from typing import Any

from imf import registry
from imf.contracts import CONTRACTS

_NOT_MEMBERS = {"__init__", "__call__"}


def check_installed(group: str) -> list[str]:
    """One line for each plugin of ``group`` that fails to load or breaks the group's contract."""
    return [line for _, line in _verdicts(group) if line]


def keeping(group: str) -> list[registry.PluginInfo]:
    """The plugins of ``group`` that load and keep its contract: the ones worth running."""
    return [info for info, line in _verdicts(group) if line is None]


def _verdicts(group: str) -> list[tuple[registry.PluginInfo, str | None]]:
    """Each plugin of ``group`` that answers to its name, with what is wrong (None: nothing)."""
    contract = contract_of(group)
    verdicts: list[tuple[registry.PluginInfo, str | None]] = []
    for info in registry.discover(group):
        if info.shadowed_by:
            continue
        where = f"plugin '{info.name}' in {group} (from {info.dist})"
        if info.broken and "which is not installed" in str(info.error):
            continue  # an optional dependency not installed (imf plugins lists it) breaks no contract
        if info.broken:
            verdicts.append((info, f"{where} does not load: {info.error}"))
            continue
        found = problem(registry.get(group, info.name), contract)
        verdicts.append((info, f"{where} breaks its contract: {found}" if found else None))
    return verdicts


def contract_of(group: str) -> type:
    """The Protocol of ``group`` (imf/contracts.py)."""
    return CONTRACTS[group]


def problem(plugin: Any, contract: type) -> str | None:
    """What ``plugin`` lacks of ``contract`` (one phrase), or None when it keeps it."""
    if "__call__" in vars(contract):
        if isinstance(plugin, type) or not callable(plugin):
            return f"must be a function (contract {contract.__name__}), got {type(plugin).__name__}"
        return _call_problem(plugin, vars(contract)["__call__"], "the call", _takes_options(plugin))
    if not isinstance(plugin, type):
        return f"must be a class (contract {contract.__name__}), got {type(plugin).__name__}"
    for name in _required_attributes(contract):
        if not hasattr(plugin, name):
            return f"has no attribute '{name}' (contract {contract.__name__})"
    if "__init__" in vars(contract):
        found = _call_problem(plugin, vars(contract)["__init__"], "the constructor", _takes_options(plugin))
        if found:
            return found
    for name, wanted in _methods(contract).items():
        got = inspect.getattr_static(plugin, name, None)
        if got is None:
            return f"has no method '{name}' (contract {contract.__name__})"
        if getattr(got, "__isabstractmethod__", False):
            return f"does not implement '{name}' (contract {contract.__name__})"
        if isinstance(wanted, property) or isinstance(got, property):
            continue
        found = _call_problem(getattr(plugin, name), wanted, f"'{name}'", 0,
                              self_slot=inspect.isfunction(got))
        if found:
            return found
    return None


def _takes_options(plugin: Any) -> int:
    return 1 if getattr(plugin, "Options", None) is not None else 0


def _methods(contract: type) -> dict[str, Any]:
    """The public methods and properties of the contract and of its own bases (not of object
    or typing): name -> the function (a classmethod's function) or the property."""
    found: dict[str, Any] = {}
    for cls in reversed(contract.__mro__):
        if cls.__module__ in ("builtins", "typing", "abc"):
            continue
        for name, value in vars(cls).items():
            if name.startswith("_"):
                continue
            if isinstance(value, classmethod):
                found[name] = value.__func__
            elif inspect.isfunction(value) or isinstance(value, property):
                found[name] = value
    return found


def _required_attributes(contract: type) -> list[str]:
    return [name for name in vars(contract).get("__annotations__", {})
            if not name.startswith("_") and name not in vars(contract)]


def _call_problem(target: Any, wanted: Any, what: str, options: int, self_slot: bool = False) -> str | None:
    """``target`` cannot be called with the positional arguments of ``wanted`` (its first, self
    or cls, left out); ``options``: one more, unless ``wanted`` passes options already;
    ``self_slot``: ``target`` is an unbound method, self comes first."""
    params = [p.name for p in inspect.signature(wanted).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]
    n = len(params) + (options if "options" not in params else 0) + self_slot
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: nothing to hold it to
    try:
        signature.bind(*[None] * n)
    except TypeError as exc:
        return f"{what} must take ({', '.join(params) or 'no arguments'}): {exc}"
    return None
