"""Plain flow matching (rectified flow): regress v = e - x at logit-normal times and
integrate dz/dt = v with Euler steps from t = 1 (noise) to t = 0 (data). With one step it
returns the conditional mean of the data, the baseline a one-step policy must beat."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from imf.objectives.base import (ObjectiveBase, TimeOptions, check_steps, euler_sampler,
                                 interpolate, logit_normal, randn)


class FlowObjective(ObjectiveBase):
    name = "flow"
    Options = TimeOptions

    def loss(self, model, actions: torch.Tensor, cond: torch.Tensor,
             generator: torch.Generator | None = None):
        x = actions
        e = randn(x.shape, x, generator)
        t = logit_normal(x.shape[0], self.opts.time_mu, self.opts.time_sigma, x, generator)
        z = interpolate(x, e, t)  # (B, H, A)
        pred = model(z, t, torch.zeros_like(t), cond)  # h = 0: the instantaneous velocity
        loss = F.mse_loss(pred, e - x)
        value = loss.detach()  # read by the loop at its log points, not here (no sync)
        return loss, {"loss": value, "mse": value}

    def sample(self, model, cond: torch.Tensor, n_steps: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
        return euler_sampler(model, cond, check_steps(n_steps, self.cfg.sample_steps), generator,
                             average=False, noise_scale=self.cfg.noise_scale)
