"""The policy: normaliser + observation encoder + transformer + objective, in one nn.Module.

    batch (world units) -> normalise -> encoder (outside any JVP) -> cond (B, n_obs, F)

F is 66 for images (ResNet features + agent_pos). Keypoint observations (20 numbers a step)
need no encoder: the normalised vector is the condition feature, and the transformer's own
linear observation embedding maps it into the condition tokens.
    objective.loss(transformer, actions_norm, cond)              (training)
    objective.sample(transformer, cond) -> unnormalise -> chunk   (inference)

The normaliser travels in ``state_dict()`` as the module's extra state, so one checkpoint
restores the whole policy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from imf.data import KEYPOINT_OBS_DIM, MinMaxNormalizer
from imf.errors import CheckpointError, ConfigError
from imf.model import ImfTransformer, ObsEncoder
from imf.registry import plugin_and_options

Obs = dict[str, Any]


class ImfPolicy(nn.Module):
    def __init__(self, cfg, normalizer: MinMaxNormalizer, masks=None) -> None:
        """``masks``: the attention masks, resolved before the model is built
        (``imf.model.attention_masks(cfg.policy)``; None resolves them here)."""
        super().__init__()
        self.cfg = cfg
        p = cfg.policy
        self.n_obs_steps, self.n_action_steps, self.horizon = p.n_obs_steps, p.n_action_steps, p.horizon
        self.obs_type = p.obs_type
        self.action_frame = p.action_frame
        self.normalizer = normalizer
        objective_cls, options = plugin_and_options(cfg, "objective.options")
        self.objective = objective_cls(cfg.objective, options)
        self.encoder = ObsEncoder(p) if self.obs_type == "image" else None
        cond_dim = self.encoder.feature_dim if self.encoder is not None else KEYPOINT_OBS_DIM
        v_head = bool(getattr(self.objective, "uses_v_head", False))
        self.model = ImfTransformer(p, cond_dim, v_head=v_head, masks=masks)

    # ------------------------------------------------------------ normalisation and encoding

    def _normalize_image(self, image: torch.Tensor) -> torch.Tensor:
        if "image" in self.normalizer.keys():
            return self.normalizer.normalize("image", image)
        return image * 2.0 - 1.0  # the image range [0, 1] -> [-1, 1]

    def encode_obs(self, obs: Obs, steps: slice) -> torch.Tensor:
        """(B, n_obs, F) condition features of the observation frames ``steps``."""
        if self.obs_type == "keypoints":
            if "keypoints" not in obs:
                raise ConfigError("policy.obs_type=keypoints: the observation has no 'keypoints' "
                                  f"(got {', '.join(sorted(obs))})")
            x = torch.as_tensor(obs["keypoints"], device=self.device)[:, steps].float()  # (B, n_obs, 20)
            if x.shape[1] != self.n_obs_steps:
                raise ConfigError(f"policy.n_obs_steps: need {self.n_obs_steps} observation frames, "
                                  f"got keypoints {tuple(x.shape)}")
            return self.normalizer.normalize("keypoints", x)
        image = torch.as_tensor(obs["image"], device=self.device)[:, steps]
        # stored frames arrive as uint8 (0-255) and are scaled here, on the device; the
        # simulator's observations are already float in [0, 1]
        image = image.float() / 255.0 if image.dtype == torch.uint8 else image.float()
        pos = torch.as_tensor(obs["agent_pos"], device=self.device)[:, steps].float()
        if image.shape[1] != self.n_obs_steps or pos.shape[1] != self.n_obs_steps:
            raise ConfigError(
                f"policy.n_obs_steps: need {self.n_obs_steps} observation frames, got "
                f"image {tuple(image.shape)}, agent_pos {tuple(pos.shape)}")
        return self.encoder(self._normalize_image(image), self.normalizer.normalize("agent_pos", pos))

    def _action_origin(self, obs: Obs, frame: int) -> torch.Tensor | float:
        """(B, 1, 2) what the model's actions are relative to: the agent position at observation
        ``frame`` in the agent frame, 0 in the world frame."""
        if self.action_frame == "world":
            return 0.0
        if "agent_pos" not in obs:
            raise ConfigError("policy.action_frame=agent: the observation has no 'agent_pos' "
                              f"(got {', '.join(sorted(obs))})")
        return torch.as_tensor(obs["agent_pos"], device=self.device)[:, frame, None].float()  # (B, 1, 2)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    # ------------------------------------------------------------ training and inference

    def compute_loss(self, batch: dict, generator: torch.Generator | None = None
                     ) -> tuple[torch.Tensor, dict[str, float]]:
        """Loss of a dataset batch (world units); uses the first n_obs_steps frames."""
        cond = self.encode_obs(batch["obs"], slice(0, self.n_obs_steps))
        actions = torch.as_tensor(batch["action"], device=self.device).float()
        actions = actions - self._action_origin(batch["obs"], self.n_obs_steps - 1)  # (B, H, 2)
        actions = self.normalizer.normalize("action", actions)[:, : self.horizon]  # (B, H, 2)
        return self.objective.loss(self.model, actions, cond, generator=generator)

    @torch.no_grad()
    def predict_action(self, obs: Obs, generator: torch.Generator | None = None,
                       n_steps: int | None = None) -> torch.Tensor:
        """(B, n_action_steps, 2) world-unit actions from the last n_obs_steps frames."""
        cond = self.encode_obs(obs, slice(-self.n_obs_steps, None))
        naction = self.objective.sample(self.model, cond, n_steps=n_steps, generator=generator)
        action = self.normalizer.unnormalize("action", naction)  # (B, H, 2)
        action = action + self._action_origin(obs, -1)  # the last observed frame's position in the agent frame
        start = self.n_obs_steps - 1
        return action[:, start: start + self.n_action_steps]

    def forward(self, obs: Obs) -> torch.Tensor:
        """The scorer's interface: ``policy(obs)`` is ``predict_action(obs)``."""
        return self.predict_action(obs)

    def compile_steps(self) -> None:
        """training.compile: torch.compile the transformer's passes and the image encoder."""
        self.model.compile_steps()
        if self.encoder is not None:
            self.encoder.compile()

    def optimizer_groups(self, training_cfg) -> list[dict]:
        """AdamW groups: transformer decay / no-decay, an image encoder at encoder_weight_decay."""
        groups = self.model.optim_groups(training_cfg.weight_decay)
        if self.encoder is not None:
            groups.append({"params": list(self.encoder.parameters()),
                           "weight_decay": training_cfg.encoder_weight_decay, "name": "encoder"})
        return groups

    # ------------------------------------------------------------ checkpoint state

    def get_extra_state(self) -> dict:
        return {"normalizer": self.normalizer.state_dict()}

    def set_extra_state(self, state: dict) -> None:
        if not isinstance(state, dict) or "normalizer" not in state:
            raise CheckpointError("checkpoint: policy extra state has no 'normalizer'")
        self.normalizer = MinMaxNormalizer.from_state_dict(state["normalizer"])


class ActionEnsemble(nn.Module):
    """Policies whose action chunks are averaged: each member samples its own chunk (world
    units, through its own normaliser) from the same observation, and the chunks' mean is
    executed. Every member must see and act in the same spaces (checked when it is built)."""

    def __init__(self, members: list[ImfPolicy]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ConfigError(f"an action ensemble needs at least 2 policies, got {len(members)}")
        first = members[0]
        for other in members[1:]:
            for name in ("obs_type", "n_obs_steps", "n_action_steps"):
                if getattr(other, name) != getattr(first, name):
                    raise CheckpointError(f"action ensemble: members differ in policy.{name} "
                                          f"({getattr(first, name)} vs {getattr(other, name)}); "
                                          "averaged chunks need the same observations and chunk length")
        self.members = nn.ModuleList(members)
        self.obs_type, self.n_obs_steps = first.obs_type, first.n_obs_steps
        self.n_action_steps = first.n_action_steps

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @torch.no_grad()
    def predict_action(self, obs: Obs, generator: torch.Generator | None = None,
                       n_steps: int | None = None) -> torch.Tensor:
        """(B, n_action_steps, 2): the mean of the members' world-unit chunks."""
        chunks = [m.predict_action(obs, generator=generator, n_steps=n_steps) for m in self.members]
        return torch.stack(chunks).mean(dim=0)

    def forward(self, obs: Obs) -> torch.Tensor:
        return self.predict_action(obs)


@dataclass
class LoadReport:
    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    shape_mismatched: list[str] = field(default_factory=list)


def load_weights_partial(policy: nn.Module, state_dict: dict[str, Any]) -> LoadReport:
    """Warm-start: load every tensor whose name and shape match, skip the rest, report.

    Masks are not parameters and n_head does not change any shape, so a causal checkpoint
    loads completely into a full-attention policy (and back).
    """
    if not isinstance(state_dict, dict):
        raise CheckpointError(f"checkpoint: expected a state dict, got {type(state_dict).__name__}")
    own = policy.state_dict()
    report = LoadReport()
    usable = {}
    for name, value in state_dict.items():
        if name not in own:
            report.unexpected.append(name)
        elif _shape(own[name]) != _shape(value):
            report.shape_mismatched.append(name)
        else:
            usable[name] = value
    policy.load_state_dict(usable, strict=False)
    report.loaded = sorted(usable)
    report.missing = sorted(k for k in own if k not in state_dict)
    return report


def _shape(value: Any) -> tuple | None:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return tuple(value.shape)
    return None  # extra state (the normaliser): no shape to compare
