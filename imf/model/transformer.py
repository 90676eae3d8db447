"""The policy transformer: Diffusion Policy's TransformerForDiffusion layout with two time
tokens (t and h = t - r) for average-velocity models.

    action tokens  z (B, H, A) -> Linear -> + pos_emb -> n_layer decoder layers -> LN -> head
    cond tokens    [emb(t), emb(h), Linear(obs_1), ..., Linear(obs_n)] + cond_pos_emb -> MLP
                   (or a small transformer encoder when n_cond_layers > 0)

Masks come from the ``imf.masks`` plugin named in the config. They are non-persistent
buffers, so a checkpoint never carries them: a causal checkpoint loads into a full-attention
model (and back) tensor for tensor.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from imf.model.layers import DecoderLayer, sinusoidal_embedding
from imf.model.tangent import transformer_jvp, transformer_jvp_v_head
from imf.registry import N_TIME_TOKENS, check_masks, resolve_masks  # N_TIME_TOKENS: t and h = t - r


def attention_masks(cfg):
    """The ``imf.masks`` plugin named by ``cfg.mask``, called with its checked options: the
    AttentionMasks for this horizon and observation count, checked against the shapes this
    model takes (imf/registry/masks.py, numpy only, so the sweep's dry run makes the same check
    without torch). Plugins are found here, not while the nn.Module is built."""
    return resolve_masks(cfg)


class ImfTransformer(nn.Module):
    """``forward(z (B,H,A), t (B,), h (B,), cond (B,n_obs,F)) -> (B,H,A)``.

    ``v_head=True`` adds an auxiliary velocity head read from the same final hidden state;
    it never feeds back into u, so adding it to an old checkpoint leaves u unchanged.
    """

    def __init__(self, cfg, cond_dim: int, v_head: bool = False, masks=None) -> None:
        """``masks``: the mask plugin's AttentionMasks, resolved before the model is built
        (``attention_masks``; None resolves them from ``cfg`` here)."""
        super().__init__()
        n_emb, horizon, n_obs = cfg.n_emb, cfg.horizon, cfg.n_obs_steps
        self.horizon, self.n_obs, self.n_emb, self.action_dim = horizon, n_obs, n_emb, cfg.action_dim
        self.time_scale = float(cfg.time_scale)
        self.input_emb = nn.Linear(cfg.action_dim, n_emb)
        self.pos_emb = nn.Parameter(torch.zeros(1, horizon, n_emb))
        self.cond_obs_emb = nn.Linear(cond_dim, n_emb)
        self.cond_pos_emb = nn.Parameter(torch.zeros(1, N_TIME_TOKENS + n_obs, n_emb))
        self.drop = nn.Dropout(cfg.p_drop_emb)
        self.cond_encoder = self._make_cond_encoder(cfg)
        self.layers = nn.ModuleList(
            DecoderLayer(n_emb, cfg.n_head, cfg.p_drop_attn) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(n_emb)
        self.head = nn.Linear(n_emb, cfg.action_dim)
        self.v_head = nn.Linear(n_emb, cfg.action_dim) if v_head else None
        self._register_masks(cfg.mask, masks if masks is not None else attention_masks(cfg))
        self.apply(self._init_weights)
        self._jvp, self._jvp_v_head = transformer_jvp, transformer_jvp_v_head  # compile_steps compiles
        self._forward_with_v = _forward_with_v

    def compile_steps(self) -> None:
        """torch.compile every pass the objectives make: the forward (nn.Module.compile, so
        state_dict keys stay as they are), the written-out JVPs and the v-head forward."""
        self.compile()
        self._jvp = torch.compile(transformer_jvp)
        self._jvp_v_head = torch.compile(transformer_jvp_v_head)
        self._forward_with_v = torch.compile(_forward_with_v)

    @staticmethod
    def _make_cond_encoder(cfg) -> nn.Module:
        n_emb = cfg.n_emb
        if cfg.n_cond_layers <= 0:  # the reference's token-wise MLP
            return nn.Sequential(nn.Linear(n_emb, 4 * n_emb), nn.Mish(), nn.Linear(4 * n_emb, n_emb))
        return nn.ModuleList(
            DecoderLayer(n_emb, cfg.n_head, cfg.p_drop_attn, cross=False)
            for _ in range(cfg.n_cond_layers))

    def _register_masks(self, name: str, masks) -> None:
        n_cond = N_TIME_TOKENS + self.n_obs
        check_masks(name, masks, self.horizon, self.n_obs)  # given ones too, not only resolved ones
        for key, attr in (("self_mask", "self_attn"), ("cross_mask", "cross_attn")):
            value = getattr(masks, attr)
            tensor = None if value is None else torch.as_tensor(np.asarray(value)).bool()
            self.register_buffer(key, tensor, persistent=False)  # masks are not weights
        # A cond encoder with attention would leak observation k into every cond token;
        # under a masked variant keep it causal over [t, h, obs_1..obs_n] so the plugin's
        # "action i never sees observation k > i" still holds end to end.
        cond_mask = None if masks.cross_attn is None else torch.ones(n_cond, n_cond).tril().bool()
        self.register_buffer("cond_mask", cond_mask, persistent=False)

    def _init_weights(self, module: nn.Module) -> None:
        # Reference init: N(0, 0.02) weights, zero biases, LayerNorm 1/0, pos-emb N(0, 0.02).
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, ImfTransformer):
            nn.init.normal_(module.pos_emb, mean=0.0, std=0.02)
            nn.init.normal_(module.cond_pos_emb, mean=0.0, std=0.02)

    def encode_cond(self, t: torch.Tensor, h: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """Condition tokens (B, 2 + n_obs, D) from times (B,), (B,) and features (B, n_obs, F)."""
        times = sinusoidal_embedding(torch.stack([t, h], dim=1), self.n_emb, self.time_scale)  # (B, 2, D)
        tokens = torch.cat([times.to(cond.dtype), self.cond_obs_emb(cond)], dim=1)  # (B, 2+O, D)
        x = self.drop(tokens + self.cond_pos_emb)
        if isinstance(self.cond_encoder, nn.Sequential):
            return self.cond_encoder(x)
        for layer in self.cond_encoder:  # a small encoder: self-attention over cond tokens
            x = layer(x, None, self.cond_mask, None)
        return x

    def trunk(self, z: torch.Tensor, t: torch.Tensor, h: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """Final hidden state (B, H, D) of the action tokens."""
        memory = self.encode_cond(t, h, cond)  # (B, 2+O, D)
        x = self.drop(self.input_emb(z) + self.pos_emb[:, : z.shape[1]])  # (B, H, D)
        for layer in self.layers:
            x = layer(x, memory, self.self_mask, self.cross_mask)
        return self.ln_f(x)

    def forward(self, z: torch.Tensor, t: torch.Tensor, h: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk(z, t, h, cond))  # (B, H, A)

    def jvp(self, z, t, h, cond, dz, dt, dh) -> tuple[torch.Tensor, torch.Tensor]:
        """(u, du): the output and its derivative along (dz, dt, dh), in one pass of plain ops
        (imf/model/tangent.py); du carries no graph, u the usual one."""
        return self._jvp(self, z, t, h, cond, dz, dt, dh)

    def forward_with_v(self, z, t, h, cond):
        """(u, v): the average velocity and the auxiliary v-head, from one trunk pass."""
        self._need_v_head()
        return self._forward_with_v(self, z, t, h, cond)

    def jvp_v_head(self, z, t, h, cond, dt, dh) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(u, v, du): ``forward_with_v`` and du along (sg(v), dt, dh), the v-head's own
        velocity as the z tangent, from that one pass (imf/model/tangent.py)."""
        self._need_v_head()
        return self._jvp_v_head(self, z, t, h, cond, dt, dh)

    def _need_v_head(self) -> None:
        if self.v_head is None:
            raise ValueError("this model was built without a v-head (objective.options.tangent=boundary)")

    def optim_groups(self, weight_decay: float) -> list[dict]:
        """AdamW groups: decay on Linear/attention weights; none on biases, norms, embeddings."""
        decay, no_decay = [], []
        for module_name, module in self.named_modules():
            for name, param in module.named_parameters(recurse=False):
                if isinstance(module, nn.Linear) and name == "weight":
                    decay.append(param)
                else:  # biases, LayerNorm, position embeddings
                    no_decay.append(param)
        return [{"params": decay, "weight_decay": weight_decay, "name": "transformer_decay"},
                {"params": no_decay, "weight_decay": 0.0, "name": "transformer_no_decay"}]


def _forward_with_v(model: ImfTransformer, z, t, h, cond) -> tuple[torch.Tensor, torch.Tensor]:
    x = model.trunk(z, t, h, cond)  # (B, H, D)
    return model.head(x), model.v_head(x)
