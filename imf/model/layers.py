"""Building blocks of the policy transformer: attention that survives forward-mode AD,
the pre-norm decoder layer, and the sinusoidal time embedding.

The fused ``F.scaled_dot_product_attention`` kernels (flash / memory-efficient) have no
forward-AD rule, so inside a JVP attention falls back to plain matmuls; outside one it
uses the fused kernel, which is what makes one-step inference cheap.
"""
from __future__ import annotations

import math

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
import torch.nn.functional as F


# Flow time t lives in [0, 1]; the embedding sees t * scale (policy.time_scale). A small
# scale keeps d(embedding)/dt small, which the JVP of the iMF objective differentiates
# through: on the toy problem scale 1000 (the DiT convention) made iMF training unstable.
TIME_SCALE = 1.0


def forward_ad_active() -> bool:
    """True inside torch.func.jvp or a forward_ad.dual_level (the objectives use the
    written-out JVP of imf/model/tangent.py; this keeps the model usable under torch's own)."""
    return fwAD._current_level >= 0


def sinusoidal_embedding(t: torch.Tensor, dim: int, scale: float = TIME_SCALE) -> torch.Tensor:
    """Times in [0, 1] of any shape (...,) -> (..., dim) [sin | cos] features of t * scale."""
    dtype = t.dtype if t.is_floating_point() else torch.float32
    half = dim // 2
    log_step = math.log(10000.0) / max(half - 1, 1)
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=dtype) * -log_step)  # (half,)
    args = (t.to(dtype) * scale)[..., None] * freqs  # (..., half)
    emb = torch.cat([args.sin(), args.cos()], dim=-1)  # (..., 2 * half)
    return F.pad(emb, (0, 1)) if dim % 2 else emb


class Attention(nn.Module):
    """Multi-head attention, queries from x, keys/values from ``source`` (x itself for
    self-attention). ``mask``: bool (Tq, Tk), True = may attend, or None."""

    def __init__(self, n_emb: int, n_head: int, p_drop: float) -> None:
        super().__init__()
        self.n_head = n_head
        self.q_proj = nn.Linear(n_emb, n_emb)
        self.kv_proj = nn.Linear(n_emb, 2 * n_emb)
        self.out_proj = nn.Linear(n_emb, n_emb)
        self.p_drop = p_drop

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        return x.view(b, n, self.n_head, d // self.n_head).transpose(1, 2)  # (B, nh, T, hd)

    def forward(self, x: torch.Tensor, source: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        b, n, d = x.shape
        q = self._split(self.q_proj(x))  # (B, nh, Tq, hd)
        k, v = self.kv_proj(source).chunk(2, dim=-1)
        k, v = self._split(k), self._split(v)  # (B, nh, Tk, hd)
        p = self.p_drop if self.training else 0.0
        if not forward_ad_active():  # inside a JVP the fused kernels have no forward-AD rule
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        else:
            y = self._math_attention(q, k, v, mask, p)
        y = y.transpose(1, 2).reshape(b, n, d)  # (B, Tq, D)
        return self.out_proj(y)

    @staticmethod
    def _math_attention(q, k, v, mask, p):
        # Plain matmuls: every op here has a forward-AD rule, so torch.func.jvp works.
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, nh, Tq, Tk)
        if mask is not None:
            att = att.masked_fill(~mask, float("-inf"))
        att = F.dropout(att.softmax(dim=-1), p=p)
        return att @ v  # (B, nh, Tq, hd)


class DecoderLayer(nn.Module):
    """Pre-norm decoder layer: self-attention over action tokens, cross-attention to the
    condition tokens, GELU feed-forward of width 4 * n_emb (nn.TransformerDecoderLayer
    with norm_first=True, written out so it runs under forward-mode AD). ``cross=False``
    drops the cross-attention: an encoder layer, for the optional condition encoder."""

    def __init__(self, n_emb: int, n_head: int, p_drop: float, cross: bool = True) -> None:
        super().__init__()
        self.ln1, self.ln3 = nn.LayerNorm(n_emb), nn.LayerNorm(n_emb)
        self.self_attn = Attention(n_emb, n_head, p_drop)
        self.ln2 = nn.LayerNorm(n_emb) if cross else None
        self.cross_attn = Attention(n_emb, n_head, p_drop) if cross else None
        self.ffn = nn.Sequential(nn.Linear(n_emb, 4 * n_emb), nn.GELU(), nn.Dropout(p_drop),
                                 nn.Linear(4 * n_emb, n_emb))
        self.drop = nn.Dropout(p_drop)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None,
                cross_mask: torch.Tensor | None) -> torch.Tensor:
        h = self.ln1(x)  # (B, T, D)
        x = x + self.drop(self.self_attn(h, h, self_mask))
        if self.cross_attn is not None:
            x = x + self.drop(self.cross_attn(self.ln2(x), memory, cross_mask))
        return x + self.drop(self.ffn(self.ln3(x)))
