"""A picture of a few PushT states: the policy's 96 x 96 view beside the large frame."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from imf.atomic import atomic_path
from imf.pusht.env import PushTEnv
from imf.seeds import TEST_START

DEFAULT_SEEDS = tuple(range(TEST_START, TEST_START + 3))  # the first three test seeds


def frames_figure(path: str | os.PathLike, seeds: tuple[int, ...] = DEFAULT_SEEDS,
                  include_goal_state: bool = True) -> Path:
    """Save a PNG: one row per state, the 96 x 96 observation (upscaled) and the 512 frame."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    env = PushTEnv("image", legacy=True)
    states = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        states.append((f"reset seed {seed}", obs["image"], env.render(512)))
    if include_goal_state:
        obs, _ = env.reset(options={"reset_to_state": [300.0, 160.0, 256.0, 256.0, np.pi / 4]})
        states.append(("block on the goal", obs["image"], env.render(512)))
    fig, axes = plt.subplots(2, len(states), figsize=(3.2 * len(states), 6.6))
    for col, (title, small, large) in enumerate(states):
        axes[0, col].imshow(np.moveaxis(small, 0, -1), interpolation="nearest")
        axes[0, col].set_title(f"{title}\n96 x 96 observation", fontsize=9)
        axes[1, col].imshow(large)
        axes[1, col].set_title("512 x 512 frame", fontsize=9)
        for ax in axes[:, col]:
            ax.set_xticks([])
            ax.set_yticks([])
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    return path
