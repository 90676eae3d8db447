"""``imf trial ... --dry-run``: what a trial would be, without running it.

The id, the hashes it is recorded under, every setting that differs from its preset, the
parameter count of the policy it would build, and the resolved config (config.yaml as the run
would write it).
"""
from __future__ import annotations

import yaml

from imf.config import Config, load_config
from imf.model import attention_masks
from imf.policy import ImfPolicy
from imf.data.normalizer import MinMaxNormalizer
from imf.registry.options import fill_options
from imf.store.identity import differences
from imf.train.recording import Identity


def preset_differences(cfg: Config, preset: str) -> list[tuple[str, object, object]]:
    """(key, the preset's value, this config's) for every setting that differs."""
    base = load_config(preset)
    fill_options(base)
    return differences(cfg.to_dict(), base.to_dict())


def parameter_count(cfg: Config) -> int:
    """Trainable parameters of the policy ``cfg`` builds (encoder, transformer, heads)."""
    policy = ImfPolicy(cfg, MinMaxNormalizer(), masks=attention_masks(cfg.policy))
    return sum(p.numel() for p in policy.parameters() if p.requires_grad)


def dry_run_text(cfg: Config, preset: str, trial_id: str, identity: Identity) -> str:
    diffs = preset_differences(cfg, preset)
    lines = [f"trial {trial_id} (dry run: nothing is written or trained)",
             f"hashes: trial {identity.config_hash}, cell {identity.cell}"
             + (f", warm start {identity.init_hash}" if identity.init_hash else ""),
             f"parameters: {parameter_count(cfg):,}",
             f"differs from preset {preset} in {len(diffs)} setting(s)" + (":" if diffs else "")]
    lines += [f"  {key}: {old!r} -> {new!r}" for key, old, new in diffs]
    lines += ["resolved config:", yaml.safe_dump(cfg.to_dict(), sort_keys=False).rstrip()]
    return "\n".join(lines)
