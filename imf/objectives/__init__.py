"""Training objectives (plugin group ``imf.objectives``): imf (default), meanflow, flow, ddpm.

Each is a class built from ``ObjectiveConfig`` and its own ``Options`` with ``loss`` and
``sample``; see ``base``.

The names below are the objectives' face for other parts; each loads its module on first use
(PEP 562 ``__getattr__``); the objectives themselves are found as plugins.
"""
from __future__ import annotations

from imf.faces import lazy_names

_FACE = {"Metrics": "base",
         # benchmarks/speed/imf_step_before.py rebuilds the step before the two-pass JVP on them
         "ImfObjective": "imf", "at_least_fp32": "base", "expand": "base"}
__all__ = sorted(_FACE)


__getattr__ = lazy_names(__name__, _FACE, globals())
