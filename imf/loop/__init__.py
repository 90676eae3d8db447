"""The closed loop, ``imf loop DIR``: suggest -> sweep -> conclude, round after round, resumable.

The names below are the loop's face for other parts; each loads its module on first use (PEP 562
``__getattr__``), so ``imf --help`` imports none of it.
"""
from __future__ import annotations

from imf.faces import lazy_names

_FACE = {"LoopRequest": "loop", "dry_run": "loop", "resume_loop": "loop", "start_loop": "loop"}
__all__ = sorted(_FACE)


__getattr__ = lazy_names(__name__, _FACE, globals())
