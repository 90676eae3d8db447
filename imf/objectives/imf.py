"""Improved MeanFlow (iMF): train the compound velocity V = u + (t - r) sg(du/dt) against
v = e - x, where du/dt is a JVP of u along the network's OWN velocity (v_theta, 0, 1).

Only the r < t rows need the JVP: on r = t rows the (t - r) factor is exactly 0 and V = u
is plain flow matching at the boundary. So the batch splits into a plain-forward block and
a JVP block (see ``sample_t_r``).

Tangent sources (``objective.options.tangent``):
- ``v_head`` (the default, and the official iMF's tangent source): an auxiliary head on the
  same trunk, trained with ||v_head - v||^2; its output is the tangent, and it comes from the
  same pass as u: the written-out JVP runs its value pass (u and v_theta, with their graphs),
  then the tangent pass from that pass's tape (imf/model/tangent.py), so this tangent costs
  no forward of its own. Why the default: it learns within noise of ``boundary`` on the
  selection seeds and makes the step cheaper (benchmarks/RUNS.md, "Ablations, keypoints15";
  benchmarks/RESULTS.md, the iMF step against a flow step);
- ``boundary``: v_theta = u(z_t, t, t), one extra no-grad forward on the JVP block (a
  checkpoint trained before v_head was the default holds no v-head and keeps this one);
- ``shared``: the boundary tangent u(z_t, t, t) without its extra forward. Each r < t row is
  drawn as a copy of an r = t row (same x, e, t, condition; ``draw_paired_batch``), so the
  r = t block's own forward, detached, is the tangent of its partner. The loss is the
  boundary tangent's loss on that batch, exactly; but the batch holds about B/2 distinct
  draws instead of B, which may cost learning per step, so it is an option for a learning
  run to decide (``objective.options.tangent=shared``), not the default. It needs
  ``equal_time_ratio`` >= 0.5 (every r < t row needs a partner).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from imf.errors import OptionError
from imf.objectives.base import (MeanFlowOptions, ObjectiveBase, adaptive_loss, check_steps,
                                 draw_mean_flow_batch, draw_paired_batch, euler_sampler, expand, jvp,
                                 jvp_v_head, paired_rows, to_metrics)

TANGENTS = ("boundary", "v_head", "shared")


@dataclass
class ImfOptions(MeanFlowOptions):
    # v_head: an auxiliary head; boundary: u(z_t, t, t); shared: u(z_t, t, t) of a paired r = t row
    tangent: str = "v_head"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tangent not in TANGENTS:
            raise OptionError("tangent", f"got {self.tangent!r}, allowed: {', '.join(TANGENTS)}")
        if self.tangent == "shared" and not self.equal_time_ratio >= 0.5:
            raise OptionError("equal_time_ratio", f"must be in [0.5, 1] with tangent=shared (each r < t row "
                              f"takes its tangent from an r = t row), got {self.equal_time_ratio}")


class ImfObjective(ObjectiveBase):
    name = "imf"
    Options = ImfOptions

    def __init__(self, cfg, options: ImfOptions | None = None) -> None:
        super().__init__(cfg, options)
        self.uses_v_head = self.opts.tangent == "v_head"
        self.shared = self.opts.tangent == "shared"

    def loss(self, model, actions: torch.Tensor, cond: torch.Tensor,
             generator: torch.Generator | None = None):
        if self.shared:  # row n_eq + j is row j at r < t: the condition follows its rows
            z, v, t, r, n_eq = draw_paired_batch(actions, self.opts, generator)
            cond = paired_rows(cond, n_eq)  # (B, n_obs, F)
        else:
            z, v, t, r, n_eq = draw_mean_flow_batch(actions, self.opts, generator)
        parts = _Parts()
        if n_eq > 0:
            self._boundary_block(model, z[:n_eq], t[:n_eq], cond[:n_eq], parts)
        if n_eq < z.shape[0]:
            sl = slice(n_eq, None)
            self._jvp_block(model, z[sl], t[sl], r[sl], cond[sl], parts)
        V = torch.cat(parts.V)  # (B, H, A)
        loss = adaptive_loss(V - v, self.opts.adaptive_p, self.opts.adaptive_c)
        stats = {"imf_loss": loss.detach(), "mse": F.mse_loss(V.detach(), v)}
        if n_eq > 0:  # the r = t block is plain flow matching: a smooth progress signal
            stats["fm_mse"] = F.mse_loss(V[:n_eq].detach(), v[:n_eq])
        if self.uses_v_head:
            v_loss = F.mse_loss(torch.cat(parts.v), v)
            loss = loss + v_loss
            stats["v_head_mse"] = v_loss.detach()
        stats["loss"] = loss
        return loss, to_metrics(stats)

    def _boundary_block(self, model, z, t, cond, parts) -> None:
        h = torch.zeros_like(t)
        if self.uses_v_head:
            u, v_pred = model.forward_with_v(z, t, h, cond)
            parts.v.append(v_pred)
        else:
            u = model(z, t, h, cond)
        parts.V.append(u)  # (t - r) = 0: V = u

    def _jvp_block(self, model, z, t, r, cond, parts) -> None:
        h = t - r
        ones = torch.ones_like(t)

        if self.uses_v_head:  # one value pass: u, v_theta, and du along (sg(v_theta), 1, 1)
            u, v_pred, dudt = jvp_v_head(model, (z, t, h), (ones, ones), cond)
            parts.v.append(v_pred)
        else:
            if self.shared:  # the partner rows' u(z_t, t, t), from the r = t block's forward
                tangent = parts.V[0][: z.shape[0]].detach()  # (n_jvp, H, A)
            else:
                with torch.no_grad():
                    tangent = model(z, t, torch.zeros_like(t), cond)  # v_theta = u(z_t, t, t)
            # d/dt along (v, dr = 0, dt = 1): h = t - r moves with t, so dh = 1 as well.
            u, dudt = jvp(model, (z, t, h), (tangent, ones, ones), cond)
        u = u.to(z.dtype)  # float32 under autocast too: bf16 would round the (t - r) du/dt term
        parts.V.append(u + expand(h) * dudt.detach().to(u.dtype))

    def sample(self, model, cond: torch.Tensor, n_steps: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
        return euler_sampler(model, cond, check_steps(n_steps, self.cfg.sample_steps), generator,
                             noise_scale=self.cfg.noise_scale)


class _Parts:
    """Per-block outputs, concatenated in batch order (boundary block first)."""

    def __init__(self) -> None:
        self.V: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
