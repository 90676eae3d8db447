"""`imf plugins --check`, its second half: every mask and objective run at the shapes of every
installed preset, on the CPU, before any trial would.

A mask is called at a preset's horizon and observation steps and its arrays held to the
shapes the transformer takes (imf/registry/masks.py). An objective is built with the preset's
objective settings and computes a loss, and its gradient, on a tiny random batch of the
preset's shapes (actions (B, horizon, action_dim), condition features (B, n_obs_steps, F)
with F from the preset's observation type) through a tiny policy of the preset (n_emb 16, one
layer). A plugin is run with its own options where the preset names it, else its defaults.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from imf.config import Config, list_presets, load_config
from imf.data import MinMaxNormalizer
from imf.model import attention_masks
from imf.policy import ImfPolicy
from imf.registry import PluginInfo, call_mask, mask_problem

TINY = {"n_emb": 16, "n_layer": 1, "n_cond_layers": 0, "encoder": "small", "encoder_width": 4}
BATCH = 2


@dataclass
class ShapeCheck:
    problems: list[str] = field(default_factory=list)  # one line per plugin that fails somewhere
    masks: int = 0
    objectives: int = 0
    presets: int = 0

    def summary(self) -> str:
        return (f"{self.masks} masks and {self.objectives} objectives run at the shapes of "
                f"{self.presets} presets")


def check_shapes(masks: list[PluginInfo], objectives: list[PluginInfo]) -> ShapeCheck:
    """Run ``masks`` and ``objectives`` (plugins that load and keep their contract) at every
    installed preset; one problem line per plugin, naming the first preset it fails at."""
    presets = {name: load_config(name) for name in list_presets()}
    check = ShapeCheck(masks=len(masks), objectives=len(objectives), presets=len(presets))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: threads only contend (30x slower on a busy 2-core machine)
    try:
        for kind, infos, run in (("mask", masks, _mask_at), ("objective", objectives, _objective_at)):
            for info in infos:
                failed = [(preset, found) for preset, cfg in presets.items()
                          if (found := run(info.name, cfg)) is not None]
                if failed:
                    check.problems.append(_line(kind, info, failed))
    finally:
        torch.set_num_threads(threads)
    return check


def _line(kind: str, info: PluginInfo, failed: list[tuple[str, str]]) -> str:
    (preset, found), rest = failed[0], [p for p, _ in failed[1:]]
    also = f" (also at {len(rest)} other preset(s): {', '.join(rest)})" if rest else ""
    return f"{kind} '{info.name}' in {info.group} (from {info.dist}) at preset {preset}: {found}{also}"


def _mask_at(name: str, cfg: Config) -> str | None:
    policy = replace(cfg.policy, mask=name, mask_options=_own(cfg.policy.mask, name, cfg.policy.mask_options))
    try:
        masks = call_mask(policy)
    except Exception as exc:  # a plugin may raise anything: it is named, never fatal
        return _one_line(exc)
    return mask_problem(masks, policy.horizon, policy.n_obs_steps)


def _objective_at(name: str, cfg: Config) -> str | None:
    cfg = copy.deepcopy(cfg)
    cfg.objective.options = _own(cfg.objective.name, name, cfg.objective.options)
    cfg.objective.name = name
    heads = cfg.policy.n_head if TINY["n_emb"] % cfg.policy.n_head == 0 else 1
    cfg.policy = replace(cfg.policy, n_head=heads, **TINY)
    try:
        policy = ImfPolicy(cfg, MinMaxNormalizer(), masks=attention_masks(cfg.policy))
        return _loss_problem(policy, cfg)
    except Exception as exc:  # a plugin may raise anything: it is named, never fatal
        return _one_line(exc)


def _loss_problem(policy: ImfPolicy, cfg: Config) -> str | None:
    """What is wrong with the loss of a random batch at ``cfg``'s shapes (None: nothing)."""
    p, generator = cfg.policy, torch.Generator().manual_seed(0)
    actions = torch.randn(BATCH, p.horizon, p.action_dim, generator=generator)
    cond = torch.randn(BATCH, p.n_obs_steps, policy.model.cond_obs_emb.in_features, generator=generator)
    loss, metrics = policy.objective.loss(policy.model, actions, cond, generator=generator)
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
        return f"loss must be a scalar tensor, got {_shape(loss)}"
    if not isinstance(metrics, dict):
        return f"metrics must be a dict, got {type(metrics).__name__}"
    if not torch.isfinite(loss):
        return f"loss is {loss.item()} on a random batch"
    if not loss.requires_grad:
        return "loss carries no gradient to the model"
    loss.backward()
    return None


def _own(configured: str, name: str, options: dict[str, Any]) -> dict[str, Any]:
    """The preset's options for the plugin ``name`` when the preset names it, else none (its defaults)."""
    return dict(options or {}) if configured == name else {}


def _shape(value: Any) -> str:
    return f"shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
