"""Training objectives (plugin group ``imf.objectives``): imf (default), meanflow, flow, ddpm.

Each is a class built from ``ObjectiveConfig`` with ``loss`` and ``sample``; see ``base``.
"""
