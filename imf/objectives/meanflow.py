"""The original MeanFlow objective: regress u against sg(v - (t - r) du/dt) where du/dt is a
JVP of u along the conditional velocity (e - x, 0, 1). Same time sampling, adaptive weight,
block split and sampler as iMF; only the tangent and the place of the stop-gradient differ."""
from __future__ import annotations

import torch

from imf.objectives.base import (MeanFlowOptions, ObjectiveBase, adaptive_loss, check_steps,
                                 draw_mean_flow_batch, euler_sampler, expand, jvp, to_metrics)


class MeanFlowObjective(ObjectiveBase):
    name = "meanflow"
    Options = MeanFlowOptions

    def loss(self, model, actions: torch.Tensor, cond: torch.Tensor,
             generator: torch.Generator | None = None):
        z, v, t, r, n_eq = draw_mean_flow_batch(actions, self.opts, generator)
        errs = []
        if n_eq > 0:  # r = t: the target is v itself
            errs.append(model(z[:n_eq], t[:n_eq], torch.zeros_like(t[:n_eq]), cond[:n_eq]) - v[:n_eq])
        if n_eq < z.shape[0]:
            errs.append(self._jvp_error(model, z[n_eq:], t[n_eq:], r[n_eq:], v[n_eq:], cond[n_eq:]))
        err = torch.cat(errs)
        loss = adaptive_loss(err, self.opts.adaptive_p, self.opts.adaptive_c)
        return loss, to_metrics({"loss": loss, "mse": err.detach().pow(2).mean()})

    @staticmethod
    def _jvp_error(model, z, t, r, v, cond) -> torch.Tensor:
        h = t - r
        ones = torch.ones_like(t)

        u, dudt = jvp(model, (z, t, h), (v, ones, ones), cond)  # dr = 0, dt = 1 -> dh = 1
        target = (v - expand(h) * dudt).detach()
        return u.to(z.dtype) - target.to(z.dtype)

    def sample(self, model, cond: torch.Tensor, n_steps: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
        return euler_sampler(model, cond, check_steps(n_steps, self.cfg.sample_steps), generator,
                             noise_scale=self.cfg.noise_scale)
