"""Training objectives (plugin group ``imf.objectives``): imf (default), meanflow, flow, ddpm.

Each is a class built from ``ObjectiveConfig`` and its own ``Options`` with ``loss`` and
``sample``; see ``base``.
"""
