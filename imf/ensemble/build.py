"""The ensemble's checkpoint: a weight soup (one model) or an action ensemble (K models).

A soup is an ordinary checkpoint whose weights (under ``policy`` and ``ema``) are the uniform
mean of the members' scored weights: their EMA weights, or the raw ones where EMA was off.
An action ensemble is a checkpoint of kind ``ensemble`` (imf/train/checkpoint.py) holding each
member's config, scored weights and normaliser; ``imf eval`` rebuilds it as
``imf.policy.ActionEnsemble``. Both carry an ``ensemble`` entry that lists their members.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch

from imf.errors import EnsembleError
from imf.ensemble.members import Member, Selection, first_difference
from imf.train import ENSEMBLE_CHECKPOINT, load_checkpoint, weights_to_save
from imf.version import code_version

SAME_FOR_ACTIONS = ("obs_type", "n_obs_steps", "n_action_steps", "action_dim")


@dataclass
class Loaded:
    member: Member
    state: dict[str, Any]  # the member's checkpoint

    @property
    def weights(self) -> dict[str, Any]:
        """The weights its rollouts were scored with: EMA when the run kept one."""
        return weights_to_save(self.state.get("ema") or self.state["policy"])

    @property
    def policy_config(self) -> dict[str, Any]:
        return self.state["config"].get("policy", {})


def load_members(selection: Selection) -> list[Loaded]:
    return [Loaded(m, load_checkpoint(m.checkpoint)) for m in selection.members]


def _describe(member: Member) -> str:
    epoch = "" if member.epoch is None else f" epoch {member.epoch}"
    return f"{member.trial}{epoch} ({member.checkpoint.name})"


def check_soup(loaded: list[Loaded]) -> None:
    """One architecture, one objective, one normaliser, and weights of the same shapes."""
    first = loaded[0]
    for other in loaded[1:]:
        pair = f"{_describe(first.member)} and {_describe(other.member)}"
        diff = (first_difference(first.policy_config, other.policy_config, "policy.")
                or first_difference({"name": first.state["config"].get("objective", {}).get("name")},
                                     {"name": other.state["config"].get("objective", {}).get("name")},
                                     "objective."))
        if diff:
            raise EnsembleError(f"--mode weights: {pair} differ in architecture ({diff}); a weight "
                                "soup needs one architecture: use --mode actions, or members of one run")
        if json.dumps(first.state["normalizer"], sort_keys=True) != json.dumps(other.state["normalizer"], sort_keys=True):
            raise EnsembleError(f"--mode weights: {pair} have different normalisers (trained on other "
                                "data); a weight soup needs one: use --mode actions")
        shapes = {k: tuple(v.shape) for k, v in first.weights.items() if torch.is_tensor(v)}
        if shapes != {k: tuple(v.shape) for k, v in other.weights.items() if torch.is_tensor(v)}:
            raise EnsembleError(f"--mode weights: the weights of {pair} do not have the same "
                                "tensors and shapes; use --mode actions")


def check_actions(loaded: list[Loaded]) -> None:
    """Members may differ in architecture, not in what they observe or how they act."""
    first = loaded[0]
    for other in loaded[1:]:
        for key in SAME_FOR_ACTIONS:
            a, b = first.policy_config.get(key), other.policy_config.get(key)
            if a != b:
                raise EnsembleError(f"--mode actions: {_describe(first.member)} and "
                                    f"{_describe(other.member)} differ in policy.{key} ({a!r} vs "
                                    f"{b!r}); averaged chunks need the same observations and actions")


def soup_weights(loaded: list[Loaded]) -> dict[str, Any]:
    """The uniform mean of each floating-point tensor; other entries are the first member's."""
    weights = [item.weights for item in loaded]
    averaged: dict[str, Any] = {}
    for key, value in weights[0].items():
        if torch.is_tensor(value) and value.is_floating_point():
            stacked = torch.stack([w[key].to(torch.float64) for w in weights])
            averaged[key] = stacked.mean(dim=0).to(value.dtype)
        else:
            averaged[key] = value
    return averaged


def _listing(selection: Selection, mode: str) -> dict[str, Any]:
    return {"id": selection.id, "mode": mode, "source": str(selection.source),
            "members": [{"trial": m.trial, "checkpoint": str(m.checkpoint), "score": m.score,
                         "epoch": m.epoch} for m in selection.members]}


def soup_checkpoint(selection: Selection, loaded: list[Loaded]) -> dict[str, Any]:
    check_soup(loaded)
    first = loaded[0].state
    weights = soup_weights(loaded)
    return {"config": first["config"], "normalizer": first["normalizer"], "policy": weights,
            "ema": weights, "epoch": None, "trial_id": selection.id, "scores": {},
            "code_version": code_version(), "ensemble": _listing(selection, "weights")}


def action_checkpoint(selection: Selection, loaded: list[Loaded]) -> dict[str, Any]:
    check_actions(loaded)
    members = [{"config": item.state["config"], "normalizer": item.state["normalizer"],
                "policy": item.weights, "trial_id": item.member.trial, "epoch": item.member.epoch}
               for item in loaded]
    return {"kind": ENSEMBLE_CHECKPOINT, "config": loaded[0].state["config"], "members": members,
            "epoch": None, "trial_id": selection.id, "code_version": code_version(),
            "ensemble": _listing(selection, "actions")}


def build_checkpoint(selection: Selection, mode: str) -> dict[str, Any]:
    loaded = load_members(selection)
    return soup_checkpoint(selection, loaded) if mode == "weights" else action_checkpoint(selection, loaded)
