"""The transformer's forward pass with its directional derivative written out: (u, du) from
(z, t, h) and a tangent (dz, dt, dh), in plain tensor ops.

The mean-flow objectives need du along a tangent, and use it only stop-gradiented. So the
value pass runs with autograd as usual and the tangent pass under no_grad: the backward pass
is the one of a plain forward, no dual tensors are made, and every op here is one that
torch.compile traces (forward-mode AD under torch.compile is not). The condition features
carry no tangent: the encoder stays outside the derivative.

Two passes, value then tangent: the value pass writes onto a ``Tape`` what each layer's
derivative reads (layer-norm statistics, pre-activations, attention probabilities, dropout
masks), and the tangent pass reads it back in the same order. The tangent therefore need not
be known when the value pass runs: iMF's v-head tangent is an output of the very pass it is
the derivative along, and one value pass serves both (``transformer_jvp_v_head``). A dropout
mask is drawn once, in the value pass, and the tangent pass applies the same one, as the
derivative of the dropped-out function requires.

Where a layer's Jacobian is symmetric (the layer norm's normalisation, the softmax) its JVP
equals its VJP, so the tangent is one call of torch's fused backward kernel; GELU and Mish are
elementwise, so their backward kernels are their JVPs. One fused kernel in place of a chain of
elementwise ops is most of what the tangent pass saved beyond its matmuls
(benchmarks/RUNS.md, "iMF step against a flow step").
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

aten = torch.ops.aten


class Tape:
    """What the value pass leaves for the tangent pass, read back first in, first out."""

    def __init__(self) -> None:
        self._items: list = []
        self._next = 0

    def put(self, item) -> None:
        self._items.append(item)

    def take(self):
        item = self._items[self._next]
        self._next += 1
        return item

    def done(self) -> None:
        # A tangent pass that read a different number of entries mirrored the wrong layers.
        assert self._next == len(self._items), "the tangent pass did not mirror the value pass"


# --- value pass: each function returns the layer's output and records what its JVP reads ---

def layer_norm(m: nn.LayerNorm, x: torch.Tensor, tape: Tape) -> torch.Tensor:
    # native_layer_norm is what F.layer_norm calls (same value, same backward); it also hands
    # back the mean and 1/std that the tangent needs.
    y, mean, rstd = torch.native_layer_norm(x, m.normalized_shape, m.weight, m.bias, m.eps)
    tape.put((x, mean, rstd))
    return y


def dropout(x: torch.Tensor, p: float, training: bool, tape: Tape) -> torch.Tensor:
    if not training or p == 0.0:
        return x  # records nothing: the tangent pass tests the same condition
    keep = (torch.rand_like(x) >= p).to(x.dtype) / (1.0 - p)
    tape.put(keep)
    return x * keep


def gelu(x: torch.Tensor, tape: Tape) -> torch.Tensor:
    tape.put(x)
    return F.gelu(x)


def mish(x: torch.Tensor, tape: Tape) -> torch.Tensor:
    tape.put(x)
    return F.mish(x)


def _heads(a, y: torch.Tensor) -> torch.Tensor:
    """(B, T, D) -> (B * nh, T, hd), copied once where the heads interleave: both passes read
    q, k and v, and a strided operand would be copied again at every one of those matmuls."""
    return a._split(y).flatten(0, 1)


def _merge_heads(y: torch.Tensor, n_head: int) -> torch.Tensor:
    """(B * nh, T, hd) -> (B, T, D)."""
    bh, n, hd = y.shape
    return y.view(bh // n_head, n_head, n, hd).transpose(1, 2).reshape(bh // n_head, n, n_head * hd)


def attention(a, x: torch.Tensor, src: torch.Tensor, mask: torch.Tensor | None,
              tape: Tape) -> torch.Tensor:
    """``layers.Attention`` in plain ops (the fused kernel keeps no probabilities to record)."""
    q = _heads(a, a.q_proj(x))  # (B*nh, Tq, hd)
    k, v = (_heads(a, y) for y in a.kv_proj(src).chunk(2, dim=-1))  # (B*nh, Tk, hd)
    scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(q.shape[-1]))  # (B*nh, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    prob = scores.softmax(dim=-1)
    tape.put((q, k, prob))
    prob = dropout(prob, a.p_drop, a.training, tape)
    tape.put((v, prob))
    return a.out_proj(_merge_heads(torch.bmm(prob, v), a.n_head))


def decoder_layer(layer, x: torch.Tensor, memory: torch.Tensor | None, self_mask, cross_mask,
                  tape: Tape) -> torch.Tensor:
    """``layers.DecoderLayer`` (pre-norm)."""
    p, training = layer.drop.p, layer.drop.training
    h = layer_norm(layer.ln1, x, tape)
    x = x + dropout(attention(layer.self_attn, h, h, self_mask, tape), p, training, tape)
    if layer.cross_attn is not None:
        h = layer_norm(layer.ln2, x, tape)
        x = x + dropout(attention(layer.cross_attn, h, memory, cross_mask, tape), p, training, tape)
    lin1, _, drop, lin2 = layer.ffn
    y = gelu(lin1(layer_norm(layer.ln3, x, tape)), tape)
    y = lin2(dropout(y, drop.p, drop.training, tape))
    return x + dropout(y, p, training, tape)


def sinusoidal(t: torch.Tensor, dim: int, scale: float, tape: Tape) -> torch.Tensor:
    """``layers.sinusoidal_embedding``: [sin a, cos a] of a = t * scale * freqs."""
    half = dim // 2
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=t.dtype)
                      * -(math.log(10000.0) / max(half - 1, 1)))  # (half,)
    args = (t * scale)[..., None] * freqs  # (..., half)
    sin, cos = args.sin(), args.cos()
    tape.put((sin, cos, freqs))
    emb = torch.cat([sin, cos], dim=-1)
    return F.pad(emb, (0, 1)) if dim % 2 else emb


def value_pass(model, z, t, h, cond, tape: Tape) -> torch.Tensor:
    """``ImfTransformer.trunk(z, t, h, cond)``, the final hidden state (B, H, D), recorded."""
    times = sinusoidal(torch.stack([t, h], dim=1), model.n_emb, model.time_scale, tape)  # (B, 2, D)
    obs = model.cond_obs_emb(cond)  # (B, O, D)
    tokens = torch.cat([times.to(obs.dtype), obs], dim=1) + model.cond_pos_emb  # (B, 2+O, D)
    mem = dropout(tokens, model.drop.p, model.drop.training, tape)
    if isinstance(model.cond_encoder, nn.Sequential):  # Linear, Mish, Linear
        lin1, _, lin2 = model.cond_encoder
        mem = lin2(mish(lin1(mem), tape))
    else:
        for layer in model.cond_encoder:
            mem = decoder_layer(layer, mem, None, model.cond_mask, None, tape)
    x = model.input_emb(z) + model.pos_emb[:, : z.shape[1]]
    x = dropout(x, model.drop.p, model.drop.training, tape)  # (B, H, D)
    for layer in model.layers:
        x = decoder_layer(layer, x, mem, model.self_mask, model.cross_mask, tape)
    return layer_norm(model.ln_f, x, tape)


# --- tangent pass (under no_grad): the same layers in the same order, reading the tape ---

def _linear_t(m: nn.Linear, dx: torch.Tensor) -> torch.Tensor:
    return F.linear(dx, m.weight)  # the bias is constant


def _layer_norm_t(m: nn.LayerNorm, dx: torch.Tensor, tape: Tape) -> torch.Tensor:
    x, mean, rstd = tape.take()
    # d xhat = rstd (dx - mean(dx) - xhat mean(xhat dx)), a symmetric map of dx: the input
    # gradient kernel without the affine weight computes it; the weight scales after.
    dxhat = aten.native_layer_norm_backward(dx, x, m.normalized_shape, mean, rstd, None, None,
                                            [True, False, False])[0]
    return dxhat * m.weight


def _dropout_t(dx: torch.Tensor, p: float, training: bool, tape: Tape) -> torch.Tensor:
    return dx if not training or p == 0.0 else dx * tape.take()


def _attention_t(a, dx: torch.Tensor, dsrc: torch.Tensor, tape: Tape) -> torch.Tensor:
    q, k, prob = tape.take()
    scale = 1.0 / math.sqrt(q.shape[-1])
    dq = _heads(a, _linear_t(a.q_proj, dx))
    dk, dv = (_heads(a, y) for y in _linear_t(a.kv_proj, dsrc).chunk(2, dim=-1))
    # d(q k^T) = dq k^T + q dk^T, the scale applied in the same call
    dscores = torch.baddbmm(torch.bmm(dq, k.transpose(1, 2)), q, dk.transpose(1, 2),
                            beta=scale, alpha=scale)  # (B*nh, Tq, Tk)
    # The softmax Jacobian diag(p) - p p^T is symmetric: its backward kernel is its JVP
    # (and gives 0 where a masked p is 0).
    dprob = aten._softmax_backward_data(dscores, prob, -1, prob.dtype)
    dprob = _dropout_t(dprob, a.p_drop, a.training, tape)
    v, prob = tape.take()  # prob after dropout
    dy = torch.baddbmm(torch.bmm(dprob, v), prob, dv)  # (B*nh, Tq, hd)
    return _linear_t(a.out_proj, _merge_heads(dy, a.n_head))


def _decoder_layer_t(layer, dx: torch.Tensor, dmemory: torch.Tensor | None,
                     tape: Tape) -> torch.Tensor:
    p, training = layer.drop.p, layer.drop.training
    dh = _layer_norm_t(layer.ln1, dx, tape)
    dx = dx + _dropout_t(_attention_t(layer.self_attn, dh, dh, tape), p, training, tape)
    if layer.cross_attn is not None:
        dh = _layer_norm_t(layer.ln2, dx, tape)
        dx = dx + _dropout_t(_attention_t(layer.cross_attn, dh, dmemory, tape), p, training, tape)
    lin1, _, drop, lin2 = layer.ffn
    dy = _linear_t(lin1, _layer_norm_t(layer.ln3, dx, tape))
    dy = aten.gelu_backward(dy, tape.take())  # dy * (Phi(x) + x phi(x)), one kernel
    dy = _linear_t(lin2, _dropout_t(dy, drop.p, drop.training, tape))
    return dx + _dropout_t(dy, p, training, tape)


@torch.no_grad()
def tangent_pass(model, tape: Tape, dz, dt, dh) -> torch.Tensor:
    """du along (dz, dt, dh): the derivative of ``model.head(value_pass(...))``, from the tape."""
    sin, cos, freqs = tape.take()
    dargs = (torch.stack([dt, dh], dim=1) * model.time_scale)[..., None] * freqs  # (B, 2, half)
    dtimes = torch.cat([cos * dargs, -sin * dargs], dim=-1)  # d[sin a, cos a] = [cos a, -sin a] da
    if model.n_emb % 2:
        dtimes = F.pad(dtimes, (0, 1))
    dtokens = F.pad(dtimes.to(model.cond_pos_emb.dtype), (0, 0, 0, model.n_obs))  # (B, 2+O, D), 0 on obs
    dmem = _dropout_t(dtokens, model.drop.p, model.drop.training, tape)
    if isinstance(model.cond_encoder, nn.Sequential):
        lin1, _, lin2 = model.cond_encoder
        dmem = _linear_t(lin2, aten.mish_backward(_linear_t(lin1, dmem), tape.take()))
    else:
        for layer in model.cond_encoder:
            dmem = _decoder_layer_t(layer, dmem, None, tape)
    dx = _dropout_t(_linear_t(model.input_emb, dz), model.drop.p, model.drop.training, tape)
    for layer in model.layers:
        dx = _decoder_layer_t(layer, dx, dmem, tape)
    du = _linear_t(model.head, _layer_norm_t(model.ln_f, dx, tape))
    tape.done()
    return du  # (B, H, A)


def transformer_jvp(model, z, t, h, cond, dz, dt, dh) -> tuple[torch.Tensor, torch.Tensor]:
    """(u, du) of ``ImfTransformer.forward(z, t, h, cond)`` along (dz, dt, dh)."""
    tape = Tape()
    u = model.head(value_pass(model, z, t, h, cond, tape))  # (B, H, A)
    return u, tangent_pass(model, tape, dz, dt, dh)


def transformer_jvp_v_head(model, z, t, h, cond, dt, dh
                           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(u, v, du): u and the v-head's velocity v from one value pass, and du along
    (sg(v), dt, dh) from its tape, with no second forward."""
    tape = Tape()
    x = value_pass(model, z, t, h, cond, tape)  # (B, H, D)
    u, v = model.head(x), model.v_head(x)  # (B, H, A) each
    return u, v, tangent_pass(model, tape, v.detach(), dt, dh)
