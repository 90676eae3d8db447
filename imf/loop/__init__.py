"""The closed loop, ``imf loop DIR``: suggest -> sweep -> conclude, round after round, resumable.

The names below are the loop's face for other parts; each loads its module on first use (PEP 562
``__getattr__``), so ``imf --help`` imports none of it.
"""
from __future__ import annotations

import importlib
from typing import Any

_FACE = {"LoopRequest": "loop", "dry_run": "loop", "resume_loop": "loop", "start_loop": "loop"}
__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    module = _FACE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
