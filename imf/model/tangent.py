"""The transformer's forward pass with its directional derivative written out: (u, du) from
(z, t, h) and a tangent (dz, dt, dh), in plain tensor ops.

The mean-flow objectives need du along a tangent, and use it only stop-gradiented. So each
layer computes its output with autograd as usual and its tangent under no_grad: the backward
pass is the one of a plain forward, no dual tensors are made, and every op here is one that
torch.compile traces (forward-mode AD under torch.compile is not). The condition features
carry no tangent: the encoder stays outside the derivative.

Each function takes and returns (value, tangent) pairs; a dropout draws one mask and applies
it to both, as the derivative of the dropped-out function requires.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


Pair = tuple[torch.Tensor, torch.Tensor]


def _normalise(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(xhat, 1 / std) over the last dimension, as F.layer_norm computes them."""
    xc = x - x.mean(-1, keepdim=True)
    rstd = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + eps)
    return xc * rstd, rstd


def linear(m: nn.Linear, x: torch.Tensor, dx: torch.Tensor) -> Pair:
    y = F.linear(x, m.weight, m.bias)
    with torch.no_grad():
        return y, F.linear(dx, m.weight)  # the bias is constant


def layer_norm(m: nn.LayerNorm, x: torch.Tensor, dx: torch.Tensor) -> Pair:
    y = F.layer_norm(x, m.normalized_shape, m.weight, m.bias, m.eps)
    with torch.no_grad():
        xhat, rstd = _normalise(x, m.eps)
        dy = (dx - dx.mean(-1, keepdim=True) - xhat * (xhat * dx).mean(-1, keepdim=True)) * rstd
        return y, dy * m.weight


def dropout(x: torch.Tensor, dx: torch.Tensor, p: float, training: bool) -> Pair:
    if not training or p == 0.0:
        return x, dx
    keep = (torch.rand_like(x) >= p).to(x.dtype) / (1.0 - p)
    return x * keep, dx * keep


def gelu(x: torch.Tensor, dx: torch.Tensor) -> Pair:
    y = F.gelu(x)
    with torch.no_grad():  # d/dx x Phi(x) = Phi(x) + x phi(x)
        cdf = 0.5 * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))
        pdf = torch.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
        return y, dx * (cdf + x * pdf)


def mish(x: torch.Tensor, dx: torch.Tensor) -> Pair:
    y = F.mish(x)
    with torch.no_grad():  # d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)
        tsp = torch.tanh(F.softplus(x))
        return y, dx * (tsp + x * torch.sigmoid(x) * (1.0 - tsp * tsp))


def attention(a, x: torch.Tensor, dx: torch.Tensor, src: torch.Tensor, dsrc: torch.Tensor,
              mask: torch.Tensor | None) -> Pair:
    """``layers.Attention`` with its tangent; the softmax in plain ops (no fused kernel)."""
    b, n, d = x.shape
    q, dq = linear(a.q_proj, x, dx)
    kv, dkv = linear(a.kv_proj, src, dsrc)
    (k, v), (dk, dv) = kv.chunk(2, dim=-1), dkv.chunk(2, dim=-1)
    q, dq, k, dk, v, dv = (a._split(y) for y in (q, dq, k, dk, v, dv))  # (B, nh, T, hd)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.transpose(-2, -1)) * scale  # (B, nh, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    prob = scores.softmax(dim=-1)
    with torch.no_grad():
        dscores = (dq @ k.transpose(-2, -1) + q @ dk.transpose(-2, -1)) * scale
        dprob = prob * (dscores - (prob * dscores).sum(-1, keepdim=True))  # 0 where masked
    prob, dprob = dropout(prob, dprob, a.p_drop, a.training)
    y = prob @ v  # (B, nh, Tq, hd)
    with torch.no_grad():
        dy = dprob @ v + prob @ dv
    y, dy = (w.transpose(1, 2).reshape(b, n, d) for w in (y, dy))  # (B, Tq, D)
    return linear(a.out_proj, y, dy)


def decoder_layer(layer, x: torch.Tensor, dx: torch.Tensor, memory: torch.Tensor | None,
                  dmemory: torch.Tensor | None, self_mask, cross_mask) -> Pair:
    """``layers.DecoderLayer`` (pre-norm) with its tangent."""
    p, training = layer.drop.p, layer.drop.training
    h, dh = layer_norm(layer.ln1, x, dx)
    y, dy = dropout(*attention(layer.self_attn, h, dh, h, dh, self_mask), p, training)
    x, dx = x + y, dx + dy
    if layer.cross_attn is not None:
        h, dh = layer_norm(layer.ln2, x, dx)
        y, dy = dropout(*attention(layer.cross_attn, h, dh, memory, dmemory, cross_mask), p, training)
        x, dx = x + y, dx + dy
    lin1, act, drop, lin2 = layer.ffn
    y, dy = gelu(*linear(lin1, *layer_norm(layer.ln3, x, dx)))
    y, dy = linear(lin2, *dropout(y, dy, drop.p, drop.training))
    y, dy = dropout(y, dy, p, training)
    return x + y, dx + dy


def sinusoidal(t: torch.Tensor, dt: torch.Tensor, dim: int, scale: float) -> Pair:
    """``layers.sinusoidal_embedding`` with its tangent: d[sin a, cos a] = [cos a, -sin a] da."""
    half = dim // 2
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=t.dtype)
                      * -(math.log(10000.0) / max(half - 1, 1)))  # (half,)
    args, dargs = (t * scale)[..., None] * freqs, (dt * scale)[..., None] * freqs  # (..., half)
    emb = torch.cat([args.sin(), args.cos()], dim=-1)
    demb = torch.cat([args.cos() * dargs, -args.sin() * dargs], dim=-1)
    if dim % 2:
        emb, demb = F.pad(emb, (0, 1)), F.pad(demb, (0, 1))
    return emb, demb


def transformer_jvp(model, z, t, h, cond, dz, dt, dh) -> Pair:
    """(u, du) of ``ImfTransformer.forward(z, t, h, cond)`` along (dz, dt, dh)."""
    times, dtimes = sinusoidal(torch.stack([t, h], dim=1), torch.stack([dt, dh], dim=1),
                               model.n_emb, model.time_scale)  # (B, 2, D)
    obs = model.cond_obs_emb(cond)  # (B, O, D), no tangent
    tokens = torch.cat([times.to(obs.dtype), obs], dim=1) + model.cond_pos_emb  # (B, 2+O, D)
    dtokens = torch.cat([dtimes.to(obs.dtype), torch.zeros_like(obs)], dim=1)
    mem, dmem = dropout(tokens, dtokens, model.drop.p, model.drop.training)
    if isinstance(model.cond_encoder, nn.Sequential):  # Linear, Mish, Linear
        lin1, _, lin2 = model.cond_encoder
        mem, dmem = linear(lin2, *mish(*linear(lin1, mem, dmem)))
    else:
        for layer in model.cond_encoder:
            mem, dmem = decoder_layer(layer, mem, dmem, None, None, model.cond_mask, None)
    x, dx = linear(model.input_emb, z, dz)
    x, dx = dropout(x + model.pos_emb[:, : z.shape[1]], dx, model.drop.p, model.drop.training)
    for layer in model.layers:
        x, dx = decoder_layer(layer, x, dx, mem, dmem, model.self_mask, model.cross_mask)
    return linear(model.head, *layer_norm(model.ln_f, x, dx))  # (B, H, A) twice
