"""Checkpoints: atomic save, safe load, top-k by score, warm start.

A checkpoint is a dict of tensors and plain Python values (loadable with
``weights_only=True``): config, normaliser, policy weights, EMA weights,
optimizer and scheduler state, epoch, scores, RNG states and code version.
"""
from __future__ import annotations

import io
import random
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from imf.atomic import atomic_path
from imf.errors import CheckpointError
from imf.store import topk_files, topk_name
from imf.upgrade import FileKind, Step


EXTRA = "_extra_state"  # a module's get_extra_state(): the policy's normaliser


def _from_format_1(state: dict[str, Any]) -> dict[str, Any]:
    """Format 1: a policy config from before keypoint observations names no obs_type (it trained
    on images), and older writers kept a copy of the normaliser in the policy's and the EMA's
    weights; the checkpoint's own ``normalizer`` is the one every reader uses."""
    config = state.get("config")
    if isinstance(config, dict) and isinstance(config.get("policy"), dict):
        config["policy"].setdefault("obs_type", "image")
    for holder in [state, *(m for m in state.get("members") or [] if isinstance(m, dict))]:
        for key in ("policy", "ema"):
            if isinstance(holder.get(key), dict):
                holder[key] = {k: v for k, v in holder[key].items() if k != EXTRA}
    return state


KIND = FileKind("checkpoint", (Step(2, "obs_type named, one normaliser", _from_format_1),),
                key="format", prefix="imf-checkpoint-")
FORMAT = KIND.stamp()


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Write through a temp file and a rename: never a half checkpoint. Serialised in memory
    first: torch's own file writer reports a full disk as a RuntimeError without an errno,
    Python's write as the OSError that ``atomic_path`` turns into a DiskFullError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, **state}, buffer)
    with atomic_path(path) as tmp, open(tmp, "xb") as handle:
        handle.write(buffer.getbuffer())


def weights_to_save(state_dict: dict[str, Any]) -> dict[str, Any]:
    """A policy's (or its EMA's) weights without the normaliser: the checkpoint keeps one copy
    of it, under ``normalizer``, instead of three (``weights_with_normalizer`` puts it back)."""
    return {k: v for k, v in state_dict.items() if k != EXTRA}


def weights_with_normalizer(weights: dict[str, Any], ckpt: dict[str, Any]) -> dict[str, Any]:
    """Weights from a checkpoint, ready for ``load_state_dict``: the checkpoint's normaliser is
    the policy's extra state."""
    return {**weights, EXTRA: {"normalizer": ckpt["normalizer"]}}


def copy_checkpoint(source: Path, target: Path) -> None:
    """Copy through a temp file and a rename, like ``save_checkpoint``."""
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


def load_checkpoint(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"checkpoint {path} is a folder, not a checkpoint file")
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if not zipfile.is_zipfile(path):  # torch.save writes a zip; on other bytes torch.load's errors say little
        raise CheckpointError(f"checkpoint {path} is not readable: {_NOT_TORCH}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds on a bad file
        raise CheckpointError(f"checkpoint {path} is not readable: {_load_failure(exc)}") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path} is not an imf checkpoint (format {FORMAT} expected)")
    try:
        state = KIND.upgrade(state)
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {path} is not an imf checkpoint this imf reads ({exc})") from None
    if state.get("kind") == ENSEMBLE:
        _check_members(state, path)
        return state
    for key in MODEL_KEYS:
        if key not in state:
            raise CheckpointError(f"checkpoint {path} has no '{key}' entry")
    return state


MODEL_KEYS = ("config", "policy", "normalizer")  # what one model's checkpoint must hold
ENSEMBLE = "ensemble"  # the kind of a checkpoint holding several models (imf ensemble --mode actions)


def _check_members(state: dict[str, Any], path: Path) -> None:
    """An ensemble checkpoint: its config (the first member's) and two or more members, each
    with its own config, weights and normaliser."""
    members = state.get("members")
    if "config" not in state or not isinstance(members, list) or len(members) < 2:
        raise CheckpointError(f"checkpoint {path} is an ensemble without a config and 2 or more members")
    for index, member in enumerate(members):
        missing = [k for k in MODEL_KEYS if not isinstance(member, dict) or k not in member]
        if missing:
            raise CheckpointError(f"checkpoint {path}: ensemble member {index} has no "
                                  f"'{missing[0]}' entry")


_NOT_TORCH = "not a torch checkpoint file (or a truncated one)"


def _load_failure(exc: Exception) -> str:
    """A short reason for a failed ``torch.load``; torch's own messages run to paragraphs."""
    text = str(exc)
    if any(s in text for s in ("zip archive", "central directory")):
        return _NOT_TORCH
    if "Weights only load failed" in text or "pickle" in text.lower():
        return "not a checkpoint written by imf (it holds objects other than tensors and plain values)"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:160]


# ------------------------------------------------------------------ RNG state

def rng_state() -> dict[str, Any]:
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"torch": torch.get_rng_state(), "python": random.getstate(),
             "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached]}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ------------------------------------------------------------------ top-k

@dataclass
class TopK:
    """The k best checkpoints by test_mean_score, as files named by epoch and score."""

    folder: Path
    k: int
    entries: list[tuple[float, int, str]] = field(default_factory=list)  # (score, epoch, name)

    def wants(self, score: float) -> bool:
        return self.k > 0 and (len(self.entries) < self.k or score > min(self.entries)[0])

    def add(self, score: float, epoch: int, source: Path) -> Path | None:
        """Copy ``source`` in as a top-k file if it earns a place; drop the worst beyond k."""
        if not self.wants(score):
            return None
        name = topk_name(epoch, score)
        copy_checkpoint(source, self.folder / name)
        self.entries.append((score, epoch, name))
        self.entries.sort(key=lambda e: (-e[0], e[1]))
        for _, _, dropped in self.entries[self.k:]:
            (self.folder / dropped).unlink(missing_ok=True)
        del self.entries[self.k:]
        return self.folder / name

    def names(self) -> list[str]:
        return [name for _, _, name in self.entries]

    def state_dict(self) -> list[list[Any]]:
        return [list(e) for e in self.entries]

    def load_state_dict(self, entries: list[list[Any]], upto_epoch: int | None = None) -> None:
        """The saved entries, plus the top-k files on disk they miss (up to ``upto_epoch``):
        latest.pt is written before its own epoch's top-k copy, so that one is known only
        from the folder. Beyond k, the worst are dropped, as ``add`` does."""
        self.entries = [(float(s), int(e), str(n)) for s, e, n in entries]
        known = set(self.names())
        for path, epoch, score in topk_files(self.folder):
            if path.name not in known and (upto_epoch is None or epoch <= upto_epoch):
                self.entries.append((score, epoch, path.name))
        self.entries.sort(key=lambda e: (-e[0], e[1]))
        for _, _, dropped in self.entries[self.k:]:
            (self.folder / dropped).unlink(missing_ok=True)
        del self.entries[self.k:]


# ------------------------------------------------------------------ warm start

def warm_start_line(report: Any, source: Path) -> str:
    """One line with the counts of a ``LoadReport`` (the normaliser's extra state is no tensor)."""
    def tensors(names: list[str]) -> int:
        return sum(1 for n in names if not n.endswith("_extra_state"))
    kind = "partial warm start (training.init_partial)" if report.shape_mismatched else "warm start"
    return (f"{kind} from {source}: {tensors(report.loaded)} tensors loaded, "
            f"{tensors(report.missing)} missing, {tensors(report.unexpected)} unexpected, "
            f"{tensors(report.shape_mismatched)} shape-mismatched")


def check_compatible(ckpt: dict[str, Any], policy_cfg: Any, source: Path) -> None:
    """Refuse a checkpoint made for another action or observation space, or several models."""
    if ckpt.get("kind") == ENSEMBLE:
        raise CheckpointError(f"checkpoint {source} is an action ensemble of {len(ckpt['members'])} "
                              "models; warm start needs one model's checkpoint (a member's, or a "
                              "weight soup from imf ensemble --mode weights)")
    old = ckpt["config"].get("policy", {})
    old_obs = old.get("obs_type")
    if old_obs != policy_cfg.obs_type:
        raise CheckpointError(
            f"checkpoint {source} was trained with policy.obs_type={old_obs}, this run has "
            f"{policy_cfg.obs_type}; warm start needs the same observation type")
    for key in ("action_dim", "n_obs_steps"):
        mine = getattr(policy_cfg, key)
        if key in old and old[key] != mine:
            raise CheckpointError(
                f"checkpoint {source} was trained with policy.{key}={old[key]}, this run has {mine}; "
                f"warm start needs the same action and observation space")
    old_frame = old.get("action_frame", "world")  # a checkpoint from before the key predicted world actions
    if old_frame != policy_cfg.action_frame:
        raise CheckpointError(
            f"checkpoint {source} was trained with policy.action_frame={old_frame}, this run has "
            f"{policy_cfg.action_frame}; warm start needs the same action space")
    norm = ckpt["normalizer"]
    for key in ("action", "agent_pos"):
        if key in norm and len(norm[key]["scale"]) not in (1, policy_cfg.action_dim):
            raise CheckpointError(
                f"checkpoint {source}: normaliser '{key}' has {len(norm[key]['scale'])} dimensions, "
                f"this run has {policy_cfg.action_dim}")


def check_shapes(own: dict[str, Any], weights: dict[str, Any], ckpt: dict[str, Any], policy_cfg: Any,
                 source: Path, partial: bool) -> None:
    """Refuse a warm start when any tensor's shape differs from this run's (a checkpoint of
    another architecture loads a few tensors and trains the rest from scratch), naming the
    first few keys and the config difference; ``partial`` (training.init_partial) allows it.
    Tensors the checkpoint lacks (a new module) stay allowed."""
    differ = [(name, _shape(weights[name]), _shape(value)) for name, value in own.items()
              if name in weights and _shape(value) != _shape(weights[name])]
    if not differ or partial:
        return
    shown = ", ".join(f"{name} {list(theirs)} vs {list(mine)}" for name, theirs, mine in differ[:3])
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    tensors = sum(1 for name in own if name in weights and _shape(own[name]) is not None)
    raise CheckpointError(
        f"--init-from {source}: {len(differ)} of {tensors} tensors differ in shape ({shown}{more}; "
        f"checkpoint vs this run); {_config_difference(ckpt, policy_cfg)}; warm start needs the same "
        f"architecture, or set training.init_partial=true to load the {tensors - len(differ)} that match")


def _shape(value: Any) -> tuple | None:
    return tuple(value.shape) if isinstance(value, (torch.Tensor, np.ndarray)) else None


def _config_difference(ckpt: dict[str, Any], policy_cfg: Any) -> str:
    old = ckpt["config"].get("policy", {}) if isinstance(ckpt.get("config"), dict) else {}
    mine = {f: getattr(policy_cfg, f) for f in getattr(policy_cfg, "__dataclass_fields__", {})}
    changed = [f"policy.{key} {old[key]} vs {value}" for key, value in mine.items()
               if key in old and old[key] != value]
    if not changed:
        return "their policy settings are the same (a checkpoint of another imf version?)"
    return "the checkpoint has " + ", ".join(changed[:4]) + (" ..." if len(changed) > 4 else "")
