"""Linear and LayerNorm with hand-written forward-mode derivatives.

PyTorch's built-in forward-AD rule for ``linear`` materialises zero tangents for the
weight and bias and multiplies them anyway: a JVP through nn.Linear costs ~4-5 forward
passes instead of ~2. The iMF objective runs one JVP per training step, so these modules
swap in an ``autograd.Function`` with an explicit ``jvp`` (tangent = x_t W^T, plus the
weight/bias terms only when those carry tangents) whenever forward AD is active, and are
plain nn.Linear / nn.LayerNorm otherwise. They subclass the nn modules, so init, optimizer
groups and checkpoints treat them exactly like the originals.
"""
from __future__ import annotations

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
import torch.nn.functional as F


def forward_ad_active() -> bool:
    """True inside torch.func.jvp or a torch.autograd.forward_ad.dual_level."""
    return fwAD._current_level >= 0


class _LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(x, weight, bias):
        return F.linear(x, weight, bias)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias = inputs
        ctx.save_for_backward(x, weight)
        ctx.save_for_forward(x, weight)
        ctx.has_bias = bias is not None
        ctx.set_materialize_grads(False)  # absent tangents stay None instead of zeros

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if grad is None:
            return None, None, None
        g2 = grad.reshape(-1, grad.shape[-1])  # (N, out)
        gx = grad @ weight if ctx.needs_input_grad[0] else None
        gw = g2.t() @ x.reshape(-1, x.shape[-1]) if ctx.needs_input_grad[1] else None
        gb = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb

    @staticmethod
    def jvp(ctx, x_t, weight_t, bias_t):
        x, weight = ctx.saved_tensors
        out = F.linear(x_t, weight) if x_t is not None else None
        if weight_t is not None:  # only when the weights themselves are dual
            extra = F.linear(x, weight_t)
            out = extra if out is None else out + extra
        if bias_t is not None:
            out = bias_t.expand(*x.shape[:-1], weight.shape[0]).contiguous() if out is None else out + bias_t
        return out


def _normalise(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(xhat, 1 / std) over the last dimension, as F.layer_norm computes them."""
    xc = x - x.mean(-1, keepdim=True)
    rstd = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + eps)  # faster than x.var on CPU
    return xc * rstd, rstd


class _LayerNormFn(torch.autograd.Function):
    """Tangent of y = xhat * g + b with xhat = (x - mean) / std, weights without tangent:
    y_t = g * (x_t - mean(x_t) - xhat * mean(xhat * x_t)) / std."""

    @staticmethod
    def forward(x, weight, bias, eps):
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias, eps = inputs
        ctx.save_for_forward(x, weight)
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if grad is None:
            return None, None, None, None
        xhat, rstd = _normalise(x, ctx.eps)
        gxhat = grad * weight
        gx = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                     - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        dims = tuple(range(grad.dim() - 1))
        gw = (grad * xhat).sum(dims) if ctx.needs_input_grad[1] else None
        gb = grad.sum(dims) if ctx.needs_input_grad[2] else None
        return gx if ctx.needs_input_grad[0] else None, gw, gb, None

    @staticmethod
    def jvp(ctx, x_t, weight_t, bias_t, eps_t):
        x, weight = ctx.saved_tensors
        xhat, rstd = _normalise(x, ctx.eps)
        if x_t is not None:
            out = (x_t - x_t.mean(-1, keepdim=True)
                   - xhat * (xhat * x_t).mean(-1, keepdim=True)) * rstd * weight
        else:
            out = torch.zeros_like(x)
        if weight_t is not None:
            out = out + xhat * weight_t
        if bias_t is not None:
            out = out + bias_t
        return out


class Linear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if forward_ad_active():
            return _LinearFn.apply(x, self.weight, self.bias)
        return F.linear(x, self.weight, self.bias)


class LayerNorm(nn.LayerNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if forward_ad_active() and self.weight is not None and self.bias is not None:
            return _LayerNormFn.apply(x, self.weight, self.bias, self.eps)
        return super().forward(x)
