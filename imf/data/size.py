"""How many episodes a data set gives training, and the check that a data size asked for fits.

``data.max_train_episodes`` keeps a random subset of the training episodes. Asking for more
than the data set has would silently train on fewer, so it is refused before a run folder or a
sweep is written, with one exception: the schema's default (the reference's 90) is a cap, not
a request, so the presets and configs that never set it keep working on smaller data sets.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from imf.data.replay_buffer import read_episode_ends
from imf.data.sampler import validation_count
from imf.errors import ConfigError


def check_data_size(data: Any, cap: int | None, *, only_local: bool = False) -> None:
    """Refuse ``data.max_train_episodes`` above the training episodes of the data set ``data``
    (a DataConfig) names: its ``path``, or the scripted demos' ``demo_episodes``. ``cap``: the
    value that is never refused. ``only_local``: skip a ``path`` not on this machine (a sweep's
    trial may find it on its queue's host)."""
    wanted = data.max_train_episodes
    if wanted is None or wanted == cap:
        return
    if data.path:
        path = Path(data.path).expanduser()
        if only_local and not path.exists():
            return
        total = len(read_episode_ends(path))
        source = f"data.path '{data.path}'"
        more = "or null for all of them"
    else:
        total = data.demo_episodes
        source = "the scripted demo set"
        more = "null for all of them, or a larger data.demo_episodes"
    held = validation_count(total, data.val_ratio)
    if wanted > total - held:
        raise ConfigError(f"config key 'data.max_train_episodes': {wanted} is more than the {total - held} "
                          f"training episodes of {source} ({total} episodes, {held} held out for "
                          f"validation at data.val_ratio {data.val_ratio:g}); give at most "
                          f"{total - held}, {more}")
