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
from imf.data import MinMaxNormalizer
from imf.registry import fill_options
from imf.store import differences
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


def step_seconds(cfg: Config, steps: int = 3) -> float:
    """Median seconds of one training step (loss, backward, AdamW) of the policy ``cfg`` builds,
    on random inputs of its shapes at its batch size, on this machine's CPU with its threads."""
    import time
    import torch
    from imf.data import KEYPOINT_OBS_DIM
    from imf.train.parts import make_optimizer
    p, batch = cfg.policy, cfg.training.batch_size
    normalizer = MinMaxNormalizer()
    for key, dim in (("action", 2), ("agent_pos", 2), ("keypoints", KEYPOINT_OBS_DIM)):
        normalizer.set_identity_range(key, 0.0, 512.0, dim)
    policy = ImfPolicy(cfg, normalizer, masks=attention_masks(cfg.policy))
    optimizer = make_optimizer(policy, cfg.training, torch.device("cpu"))
    agent_pos = torch.rand(batch, p.horizon, 2) * 512  # (B, H, 2)
    obs = ({"keypoints": torch.cat([torch.rand(batch, p.horizon, KEYPOINT_OBS_DIM - 2) * 512, agent_pos], -1),
            "agent_pos": agent_pos} if p.obs_type == "keypoints" else
           {"image": torch.rand(batch, p.horizon, 3, 96, 96), "agent_pos": agent_pos})
    data = {"obs": obs, "action": torch.rand(batch, p.horizon, 2) * 512}  # (B, H, 2)
    times = []
    for _ in range(steps + 1):  # the first step warms the allocator up
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss, _ = policy.compute_loss(data)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return sorted(times[1:])[len(times[1:]) // 2]


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
