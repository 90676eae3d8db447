"""Training objectives (plugin group ``imf.objectives``): imf (default), meanflow, flow, ddpm.

Each is a class built from ``ObjectiveConfig`` and its own ``Options`` with ``loss`` and
``sample``; see ``base``.

The names below are the objectives' face for other parts; each loads its module on first use
(PEP 562 ``__getattr__``); the objectives themselves are found as plugins.
"""
from __future__ import annotations

import importlib
from typing import Any

_FACE = {"Metrics": "base"}
__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    module = _FACE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
