"""A part's lazy public face (PEP 562): the names its ``__init__.py`` offers other parts, each
loading its module on first use, so importing the part costs nothing until a name is asked for
(``imf --help`` imports no controller; a torch-free caller imports no torch)."""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_names(package: str, face: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``face`` maps each public name to the module that
    holds it, ``"module"`` or ``"module:name"`` (a name renamed on the face); the value is kept
    in ``namespace`` (the package's globals), so the module is looked up once."""
    def __getattr__(name: str) -> Any:
        where = face.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attr or name)
        namespace[name] = value
        return value
    return __getattr__
