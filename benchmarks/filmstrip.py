"""How a policy fails: filmstrips of failed fresh-seed episodes beside the scripted expert's.

    python benchmarks/filmstrip.py CHECKPOINT [--episodes 40] [--show 3] [--out docs/failed_rollouts.png]

Runs the checkpoint's EMA policy (1 sampling step, as trained) on fresh seeds (500000..), one
episode at a time, and the scripted expert on the same seeds. Prints, over every failed episode,
where it failed: never near the goal (max coverage < 0.5), close but not aligned (max coverage
0.8-0.95), or got there and lost it (coverage fell more than 0.1 from its best), and how much
the commanded target jumps at chunk boundaries against within a chunk (an oscillation between
chunks shows as a ratio well above 1). Draws a PNG: per shown seed the policy's frames, the
expert's frames, and both coverage curves.
"""
from __future__ import annotations

import argparse
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
FRESH_START = 500000


@dataclass
class Episode:
    seed: int
    coverage: list[float] = field(default_factory=list)
    frames: list[tuple[int, np.ndarray]] = field(default_factory=list)
    jumps_boundary: list[float] = field(default_factory=list)
    jumps_within: list[float] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return max(self.coverage) > 0.95


def run_policy(policy, cfg, seed: int, every: int, max_steps: int = 300) -> Episode:
    from imf.pusht.env import PushTEnv
    env = PushTEnv(cfg.policy.obs_type, legacy=True)
    obs, info = env.reset(seed=seed)
    ep = Episode(seed, [info["coverage"]], [(0, env.render(192))])
    history = deque([obs] * cfg.policy.n_obs_steps, maxlen=cfg.policy.n_obs_steps)
    last, steps, gen = None, 0, torch.Generator().manual_seed(seed)
    while steps < max_steps:
        batch = _batch(list(history), cfg.policy.obs_type)
        with torch.no_grad():
            chunk = policy.predict_action(batch, generator=gen)[0].numpy()  # (n_act, 2)
        for i, action in enumerate(chunk):
            if last is not None:
                (ep.jumps_boundary if i == 0 else ep.jumps_within).append(float(np.linalg.norm(action - last)))
            last = action
            obs, _, done, _, info = env.step(action)
            steps += 1
            history.append(obs)
            ep.coverage.append(info["coverage"])
            if steps % every == 0:
                ep.frames.append((steps, env.render(192)))
            if done or steps >= max_steps:
                return ep
    return ep


def run_expert(seed: int, every: int, max_steps: int = 300) -> Episode:
    from imf.pusht.env import PushTEnv
    from imf.pusht.planner import ScriptedExpert
    env = PushTEnv("state", legacy=True)
    _, info = env.reset(seed=seed)
    ep = Episode(seed, [info["coverage"]], [(0, env.render(192))])
    for steps, action in enumerate(ScriptedExpert().actions(env), start=1):
        _, _, done, _, info = env.step(action)
        ep.coverage.append(info["coverage"])
        if steps % every == 0:
            ep.frames.append((steps, env.render(192)))
        if done or steps >= max_steps:
            break
    return ep


def _batch(history: list, obs_type: str) -> dict[str, torch.Tensor]:
    if obs_type == "keypoints":
        x = torch.as_tensor(np.stack(history))[None]  # (1, n_obs, 20)
        return {"keypoints": x, "agent_pos": x[..., -2:]}
    return {"image": torch.as_tensor(np.stack([h["image"] for h in history]))[None],
            "agent_pos": torch.as_tensor(np.stack([h["agent_pos"] for h in history]))[None]}


def diagnose(failed: list[Episode]) -> list[str]:
    if not failed:
        return ["no failed episode"]
    best = np.array([max(e.coverage) for e in failed])
    lost = sum(max(e.coverage) - e.coverage[-1] > 0.1 for e in failed)
    lines = [f"{len(failed)} failed episodes: max coverage mean {best.mean():.3f}, median {np.median(best):.3f}",
             f"  never near the goal (max < 0.5): {int((best < 0.5).sum())}",
             f"  between (0.5-0.8): {int(((best >= 0.5) & (best < 0.8)).sum())}",
             f"  close but not aligned (0.8-0.95): {int((best >= 0.8).sum())}",
             f"  got close and lost it again (final more than 0.1 below its best): {lost}"]
    boundary = np.mean([j for e in failed for j in e.jumps_boundary])
    within = np.mean([j for e in failed for j in e.jumps_within])
    lines.append(f"  target jump between chunks {boundary:.1f} vs within a chunk {within:.1f} world units "
                 f"(ratio {boundary / within:.2f})")
    return lines


def draw(pairs: list[tuple[Episode, Episode]], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = 7
    fig, axes = plt.subplots(2 * len(pairs), cols, figsize=(cols * 1.9, 4.0 * len(pairs)))
    axes = np.atleast_2d(axes)
    for k, (mine, expert) in enumerate(pairs):
        for row, (ep, who) in enumerate(((mine, "policy"), (expert, "expert"))):
            ax_row = axes[2 * k + row]
            picks = np.linspace(0, len(ep.frames) - 1, cols - 1).round().astype(int)
            for c, i in enumerate(picks):
                step, frame = ep.frames[i]
                ax_row[c].imshow(frame)
                ax_row[c].set_title(f"{who} seed {ep.seed}\nstep {step}" if c == 0 else f"step {step}", fontsize=7)
                ax_row[c].axis("off")
            ax = ax_row[cols - 1]
            ax.plot(mine.coverage, label="policy", lw=1)
            ax.plot(expert.coverage, label="expert", lw=1)
            ax.axhline(0.95, color="grey", lw=0.5, ls="--")
            ax.set_ylim(0, 1)
            ax.set_title("coverage" + (" (policy failed)" if not mine.success else ""), fontsize=7)
            ax.tick_params(labelsize=6)
            if row == 0:
                ax.legend(fontsize=6)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--show", type=int, default=3)
    parser.add_argument("--every", type=int, default=25, help="steps between drawn frames")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "failed_rollouts.png")
    args = parser.parse_args()
    from imf.train.checkpoint import load_checkpoint
    from imf.train.evaluate import policy_from_checkpoint
    policy, cfg = policy_from_checkpoint(load_checkpoint(args.checkpoint), torch.device("cpu"))
    episodes = [run_policy(policy, cfg, FRESH_START + i, args.every) for i in range(args.episodes)]
    failed = [e for e in episodes if not e.success]
    print(f"{args.checkpoint}: {len(episodes) - len(failed)}/{len(episodes)} fresh-seed episodes succeeded, "
          f"mean max coverage {np.mean([max(e.coverage) for e in episodes]):.3f}")
    for line in diagnose(failed):
        print(line)
    shown = sorted(failed, key=lambda e: max(e.coverage))  # the worst first, then the near misses
    shown = shown[:1] + shown[-(args.show - 1):] if len(shown) > args.show else shown
    pairs = [(e, run_expert(e.seed, args.every)) for e in shown]
    if pairs:
        draw(pairs, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
