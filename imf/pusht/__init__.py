"""PushT: simulator, renderer, exact coverage, scripted expert and rollout scorer.

The names below are PushT's face for other parts; each loads its module on first use (PEP 562
``__getattr__``), so the curricula's goal pose does not start the simulator.
"""
from __future__ import annotations

from imf.faces import lazy_names

_FACE = {"PushTEnv": "env", "copy_from_cache": "expert", "ensure_demo_dataset": "expert",
         "make_demo_dataset": "expert", "DemoRecipe": "expert", "check_recipe": "expert",
         "GOAL_POSE": "geometry", "ScoreResult": "scorer", "score_policy": "scorer",
         # the expert and the demo cache, for the benchmarks that time or draw them (env_speed, demo_speed,
         # grid_cost, anchors, filmstrip)
         "cached_sizes": "expert", "default_cache_dir": "expert", "demo_dataset_path": "expert",
         "run_expert_episode": "expert", "ScriptedExpert": "planner"}
__all__ = sorted(_FACE)


__getattr__ = lazy_names(__name__, _FACE, globals())
