"""The dry run's check of a sweep's masks: each mask called at each trial's own config (its
horizon and observation steps, the grid's values included) and held to the shapes the
transformer takes, with numpy alone (the controller imports no torch; imf/registry/masks.py
is the transformer's own check). A wrong shape is refused in one line before any trial."""
from __future__ import annotations

import json

from imf.config import load_config
from imf.errors import ConfigError, SweepError
from imf.registry import resolve_masks
from imf.sweep.state import SweepState


def check_masks(state: SweepState) -> None:
    """A SweepError naming the mask, the trial and the shapes expected and got, for the first
    trial whose mask the transformer would refuse; each distinct mask and shape is called once."""
    seen: set[tuple[str, int, int, str]] = set()
    for trial in state.trials:
        policy = load_config(state.config, [*state.overrides, *trial.overrides]).policy
        key = (policy.mask, policy.horizon, policy.n_obs_steps,
               json.dumps(policy.mask_options, sort_keys=True, default=str))
        if key in seen:
            continue
        seen.add(key)
        try:
            resolve_masks(policy)
        except ConfigError as exc:
            raise SweepError(f"{exc}; at trial {trial.id} of {state.config}, before any trial starts") from None
        except Exception as exc:  # a plugin may raise anything: the dry run names it
            raise SweepError(f"config key 'policy.mask': plugin '{policy.mask}' raised {type(exc).__name__}: "
                             f"{exc}; at trial {trial.id} of {state.config}, before any trial starts") from None
