"""The iMF training step as it was before the two-pass JVP (2026-12-05), kept only as the
reference that benchmarks/speed/imf_step.py times beside today's step and that
tests/test_objectives_step_before.py checks today's loss and gradients against.

What changed since: the tangent of every layer was a chain of elementwise ops (GELU through
erf and exp, the layer norm and the softmax through their formulas) interleaved with the
value; today it is torch's fused backward kernel on the value pass's tape. And the v-head
tangent ran its own forward for u and v_theta, then the JVP's value pass again under no_grad.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from imf.objectives import ImfObjective, at_least_fp32, expand


def _linear(m, x, dx):
    y = F.linear(x, m.weight, m.bias)
    with torch.no_grad():
        return y, F.linear(dx, m.weight)


def _layer_norm(m, x, dx):
    y = F.layer_norm(x, m.normalized_shape, m.weight, m.bias, m.eps)
    with torch.no_grad():
        xc = x - x.mean(-1, keepdim=True)
        rstd = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + m.eps)
        xhat = xc * rstd
        dy = (dx - dx.mean(-1, keepdim=True) - xhat * (xhat * dx).mean(-1, keepdim=True)) * rstd
        return y, dy * m.weight


def _dropout(x, dx, p, training):
    if not training or p == 0.0:
        return x, dx
    keep = (torch.rand_like(x) >= p).to(x.dtype) / (1.0 - p)
    return x * keep, dx * keep


def _gelu(x, dx):
    y = F.gelu(x)
    with torch.no_grad():
        cdf = 0.5 * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))
        pdf = torch.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
        return y, dx * (cdf + x * pdf)


def _mish(x, dx):
    y = F.mish(x)
    with torch.no_grad():
        tsp = torch.tanh(F.softplus(x))
        return y, dx * (tsp + x * torch.sigmoid(x) * (1.0 - tsp * tsp))


def _attention(a, x, dx, src, dsrc, mask):
    b, n, d = x.shape
    q, dq = _linear(a.q_proj, x, dx)
    kv, dkv = _linear(a.kv_proj, src, dsrc)
    (k, v), (dk, dv) = kv.chunk(2, dim=-1), dkv.chunk(2, dim=-1)
    q, dq, k, dk, v, dv = (a._split(y) for y in (q, dq, k, dk, v, dv))  # (B, nh, T, hd)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    prob = scores.softmax(dim=-1)
    with torch.no_grad():
        dscores = (dq @ k.transpose(-2, -1) + q @ dk.transpose(-2, -1)) * scale
        dprob = prob * (dscores - (prob * dscores).sum(-1, keepdim=True))
    prob, dprob = _dropout(prob, dprob, a.p_drop, a.training)
    y = prob @ v
    with torch.no_grad():
        dy = dprob @ v + prob @ dv
    y, dy = (w.transpose(1, 2).reshape(b, n, d) for w in (y, dy))
    return _linear(a.out_proj, y, dy)


def _decoder_layer(layer, x, dx, memory, dmemory, self_mask, cross_mask):
    p, training = layer.drop.p, layer.drop.training
    h, dh = _layer_norm(layer.ln1, x, dx)
    y, dy = _dropout(*_attention(layer.self_attn, h, dh, h, dh, self_mask), p, training)
    x, dx = x + y, dx + dy
    if layer.cross_attn is not None:
        h, dh = _layer_norm(layer.ln2, x, dx)
        y, dy = _dropout(*_attention(layer.cross_attn, h, dh, memory, dmemory, cross_mask), p, training)
        x, dx = x + y, dx + dy
    lin1, _, drop, lin2 = layer.ffn
    y, dy = _gelu(*_linear(lin1, *_layer_norm(layer.ln3, x, dx)))
    y, dy = _linear(lin2, *_dropout(y, dy, drop.p, drop.training))
    y, dy = _dropout(y, dy, p, training)
    return x + y, dx + dy


def _sinusoidal(t, dt, dim, scale):
    half = dim // 2
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=t.dtype) * -(math.log(10000.0) / max(half - 1, 1)))
    args, dargs = (t * scale)[..., None] * freqs, (dt * scale)[..., None] * freqs
    emb = torch.cat([args.sin(), args.cos()], dim=-1)
    demb = torch.cat([args.cos() * dargs, -args.sin() * dargs], dim=-1)
    if dim % 2:
        emb, demb = F.pad(emb, (0, 1)), F.pad(demb, (0, 1))
    return emb, demb


def jvp_before(model, z, t, h, cond, dz, dt, dh):
    """(u, du) of the transformer along (dz, dt, dh), value and tangent interleaved per layer."""
    times, dtimes = _sinusoidal(torch.stack([t, h], dim=1), torch.stack([dt, dh], dim=1),
                                model.n_emb, model.time_scale)
    obs = model.cond_obs_emb(cond)
    tokens = torch.cat([times.to(obs.dtype), obs], dim=1) + model.cond_pos_emb
    dtokens = torch.cat([dtimes.to(obs.dtype), torch.zeros_like(obs)], dim=1)
    mem, dmem = _dropout(tokens, dtokens, model.drop.p, model.drop.training)
    if isinstance(model.cond_encoder, nn.Sequential):
        lin1, _, lin2 = model.cond_encoder
        mem, dmem = _linear(lin2, *_mish(*_linear(lin1, mem, dmem)))
    else:
        for layer in model.cond_encoder:
            mem, dmem = _decoder_layer(layer, mem, dmem, None, None, model.cond_mask, None)
    x, dx = _linear(model.input_emb, z, dz)
    x, dx = _dropout(x + model.pos_emb[:, : z.shape[1]], dx, model.drop.p, model.drop.training)
    for layer in model.layers:
        x, dx = _decoder_layer(layer, x, dx, mem, dmem, model.self_mask, model.cross_mask)
    return _linear(model.head, *_layer_norm(model.ln_f, x, dx))


def _jvp(model, primals, tangents, cond):
    with torch.autocast(device_type=primals[0].device.type, enabled=False):
        return jvp_before(model, *map(at_least_fp32, primals), at_least_fp32(cond), *map(at_least_fp32, tangents))


class ImfBefore(ImfObjective):
    """``ImfObjective`` with the JVP block of before: the same draws, blocks and loss."""

    def _jvp_block(self, model, z, t, r, cond, parts) -> None:
        h = t - r
        ones = torch.ones_like(t)
        if self.uses_v_head:
            u, v_pred = model.forward_with_v(z, t, h, cond)
            parts.v.append(v_pred)
            with torch.no_grad():
                _, dudt = _jvp(model, (z, t, h), (v_pred.detach(), ones, ones), cond)
        else:
            with torch.no_grad():
                tangent = model(z, t, torch.zeros_like(t), cond)
            u, dudt = _jvp(model, (z, t, h), (tangent, ones, ones), cond)
        u = u.to(z.dtype)
        parts.V.append(u + expand(h) * dudt.detach().to(u.dtype))


def before(objective: ImfObjective) -> ImfBefore:
    """The same objective (config and options) with the step of before."""
    return ImfBefore(objective.cfg, objective.opts)
