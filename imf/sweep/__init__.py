"""The sweep controller: plan a grid onto queues (plan), run it (engine: the run loop over its
parts: outcomes, queue health, starter, watcher, recovery), keep its state (state: sweep.json;
validate), show it (status, live), stop it (cancel), and end it (finish: stores, report,
notify). It starts trials as processes through the scheduler plugins of imf/scheduler/ and
never imports the trainer, the model or torch.

The names below are the sweep's face for other parts; each loads its module on first use
(PEP 562 ``__getattr__``), so ``imf --help`` imports none of the controller.
"""
from __future__ import annotations

from imf.faces import lazy_names

_FACE = {"cancel_sweep": "cancel", "Engine": "engine", "SweepDir": "folder", "resume_sweep": "launch",
         "sweep_state": "launch", "write_sweep": "launch", "sweep_view": "live", "watch": "live", "NAME_RE": "plan",
         "Plan": "plan", "TrialPlan": "plan", "cost_of": "plan", "render_plan": "plan", "load_hosts": "queues",
         "resolve_queues": "queues", "parse_rerun": "rerun", "SweepState": "state", "SweepRequest": "launch",
         "dry_run": "launch", "parse_seeds": "launch", "start_sweep": "launch", "find_sweep": "status",
         "render_status": "status", "status_view": "status",
         # a sweep planned but not started, its halving rule and its trial states: the sweep benchmarks
         # (benchmarks/speed/sweep_overhead.py, grid_cost.py; benchmarks/learning/halving*.py) plan and
         # judge without a run
         "plan_sweep": "launch", "judge": "halving", "RungScore": "state", "ACTIVE": "state",
         "FINAL": "state", "epoch_settings": "estimate", "assign": "plan"}
__all__ = sorted(_FACE)


__getattr__ = lazy_names(__name__, _FACE, globals())
