"""World-unit action error on a fixed sample of validation windows.

One batch of 64 consecutive windows with one noise draw made the number jump between epochs,
so the probe is a seeded sample of windows spread over every validation episode, scored with
the same noise each time. The hold-still error (the agent keeps its current position for the
whole chunk) on the same windows says whether the policy beats standing still.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils.data import default_collate


def _rmse(pred: torch.Tensor, truth: torch.Tensor) -> float:
    """sqrt of the mean squared Euclidean distance over windows and steps (world units)."""
    return float(torch.sqrt(((pred - truth) ** 2).sum(-1).mean()))


class ActionProbe:
    """A fixed sample of validation windows: its hold-still RMSE once, the policy's each epoch."""

    def __init__(self, dataset: Any, n_windows: int, n_obs_steps: int, n_action_steps: int,
                 batch_size: int, seed: int) -> None:
        n = min(n_windows, len(dataset))
        rng = np.random.default_rng(seed)
        self.indices = np.sort(rng.choice(len(dataset), size=n, replace=False)) if n else np.zeros(0, int)
        self.n_obs, self.n_act, self.batch_size, self.seed = n_obs_steps, n_action_steps, batch_size, seed
        items = [dataset[int(i)] for i in self.indices]
        self.batch = default_collate(items) if items else None
        if self.batch is not None:
            start = n_obs_steps - 1
            self.truth = self.batch["action"][:, start: start + n_action_steps]  # (N, n_act, 2)
            here = self.batch["obs"]["agent_pos"][:, start: start + 1]  # (N, 1, 2)
            self.hold_still = _rmse(here.expand_as(self.truth), self.truth)

    def __len__(self) -> int:
        return len(self.indices)

    @torch.no_grad()
    def measure(self, policy: Any, device: torch.device) -> dict[str, float]:
        """val_action_rmse over the executed chunk and val_action_rmse_first for its first action."""
        if self.batch is None:
            return {}
        gen = torch.Generator(device=device).manual_seed(self.seed)
        preds = []
        for lo in range(0, len(self), self.batch_size):
            obs = {k: v[lo: lo + self.batch_size, : self.n_obs].to(device)
                   for k, v in self.batch["obs"].items()}
            preds.append(policy.predict_action(obs, generator=gen).float().cpu())  # (b, n_act, 2)
        pred = torch.cat(preds)
        return {"val_action_rmse": _rmse(pred, self.truth),
                "val_action_rmse_first": _rmse(pred[:, :1], self.truth[:, :1])}
