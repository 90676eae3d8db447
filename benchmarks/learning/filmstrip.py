"""How a policy fails: filmstrips of failed fresh-seed episodes beside the scripted expert's.

    python benchmarks/learning/filmstrip.py CHECKPOINT [--episodes 40] [--show 3] [--out docs/failed_rollouts.png]
                                   [--json benchmarks/learning_results/filmstrip_image.json]

Runs the checkpoint's EMA policy (1 sampling step, as trained) on fresh seeds (500000..), one
episode at a time, and the scripted expert on the same seeds. Prints, over every failed episode,
where it failed: never near the goal (max coverage < 0.5), close but not aligned (max coverage
0.8-0.95), or got there and lost it (coverage fell more than 0.1 from its best), and how much
the commanded target jumps at chunk boundaries against within a chunk (an oscillation between
chunks shows as a ratio well above 1), and, of the near misses, how far the T was from the goal
at its best moment (position in world units, angle in degrees): what is still missing at the
goal. Draws a PNG: per shown seed the policy's frames, the expert's frames, and both coverage
curves; --json writes the counts and errors for the published text.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
FRESH_START = 500000


@dataclass
class Episode:
    seed: int
    coverage: list[float] = field(default_factory=list)
    frames: list[tuple[int, np.ndarray]] = field(default_factory=list)
    jumps_boundary: list[float] = field(default_factory=list)
    jumps_within: list[float] = field(default_factory=list)
    best_error: tuple[float, float] | None = None  # (position, degrees) from the goal at the best coverage

    @property
    def success(self) -> bool:
        return max(self.coverage) > 0.95


def run_policy(policy, cfg, seed: int, every: int, max_steps: int = 300) -> Episode:
    from imf.pusht import PushTEnv
    env = PushTEnv(cfg.policy.obs_type, legacy=True)
    obs, info = env.reset(seed=seed)
    ep = Episode(seed, [info["coverage"]], [(0, env.render(192))])
    history = deque([obs] * cfg.policy.n_obs_steps, maxlen=cfg.policy.n_obs_steps)
    last, steps, gen = None, 0, torch.Generator().manual_seed(seed)
    best = info["coverage"]
    ep.best_error = goal_error(info)
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
            if info["coverage"] > best:
                best, ep.best_error = info["coverage"], goal_error(info)
            if steps % every == 0:
                ep.frames.append((steps, env.render(192)))
            if done or steps >= max_steps:
                return ep
    return ep


def goal_error(info: dict) -> tuple[float, float]:
    """The T's distance from the goal pose: position (world units) and angle (degrees, wrapped)."""
    block, goal = info["block_pose"], info["goal_pose"]
    turn = (block[2] - goal[2] + math.pi) % (2 * math.pi) - math.pi
    return float(np.hypot(*(block[:2] - goal[:2]))), abs(math.degrees(turn))


def run_expert(seed: int, every: int, max_steps: int = 300) -> Episode:
    from imf.pusht import PushTEnv
    from imf.pusht import ScriptedExpert
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


def failure_counts(failed: list[Episode]) -> dict:
    """Where the failed episodes failed, and how far the near misses (best >= 0.8) were from the goal."""
    best = np.array([max(e.coverage) for e in failed])
    near = [e.best_error for e in failed if max(e.coverage) >= 0.8 and e.best_error is not None]
    return {"failed": len(failed), "max_coverage_mean": float(best.mean()),
            "max_coverage_median": float(np.median(best)), "never_near": int((best < 0.5).sum()),
            "between": int(((best >= 0.5) & (best < 0.8)).sum()), "close_not_aligned": int((best >= 0.8).sum()),
            "lost_it": int(sum(max(e.coverage) - e.coverage[-1] > 0.1 for e in failed)),
            "near_miss_position_median": float(np.median([p for p, _ in near])) if near else None,
            "near_miss_degrees_median": float(np.median([d for _, d in near])) if near else None,
            "jump_between_chunks": float(np.mean([j for e in failed for j in e.jumps_boundary])),
            "jump_within_chunk": float(np.mean([j for e in failed for j in e.jumps_within]))}


def diagnose(failed: list[Episode]) -> list[str]:
    if not failed:
        return ["no failed episode"]
    c = failure_counts(failed)
    lines = [f"{c['failed']} failed episodes: max coverage mean {c['max_coverage_mean']:.3f}, "
             f"median {c['max_coverage_median']:.3f}",
             f"  never near the goal (max < 0.5): {c['never_near']}",
             f"  between (0.5-0.8): {c['between']}",
             f"  close but not aligned (0.8-0.95): {c['close_not_aligned']}",
             f"  got close and lost it again (final more than 0.1 below its best): {c['lost_it']}"]
    if c["near_miss_position_median"] is not None:
        lines.append(f"  the near misses at their best: median {c['near_miss_position_median']:.1f} world units "
                     f"and {c['near_miss_degrees_median']:.1f} degrees from the goal pose")
    lines.append(f"  target jump between chunks {c['jump_between_chunks']:.1f} vs within a chunk "
                 f"{c['jump_within_chunk']:.1f} world units (ratio {c['jump_between_chunks'] / c['jump_within_chunk']:.2f})")
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
    parser.add_argument("--json", type=Path, help="write the counts and the near misses' errors here")
    args = parser.parse_args()
    if args.episodes < 1 or args.show < 1:
        sys.exit(f"filmstrip.py: --episodes and --show must be >= 1, got {args.episodes} and {args.show}")
    if not args.checkpoint.is_file():
        sys.exit(f"filmstrip.py: no checkpoint at {args.checkpoint}")
    from imf.errors import ImfError
    from imf.train import load_checkpoint
    from imf.train import policy_from_checkpoint
    try:
        policy, cfg = policy_from_checkpoint(load_checkpoint(args.checkpoint), torch.device("cpu"))
    except ImfError as exc:
        sys.exit(f"filmstrip.py: {exc}")
    episodes = [run_policy(policy, cfg, FRESH_START + i, args.every) for i in range(args.episodes)]
    failed = [e for e in episodes if not e.success]
    print(f"{args.checkpoint}: {len(episodes) - len(failed)}/{len(episodes)} fresh-seed episodes succeeded, "
          f"mean max coverage {np.mean([max(e.coverage) for e in episodes]):.3f}")
    for line in diagnose(failed):
        print(line)
    if args.json:
        record = {"checkpoint": str(args.checkpoint), "seeds": "selection", "seed_start": FRESH_START,
                  "episodes": len(episodes), "succeeded": len(episodes) - len(failed),
                  "mean_max_coverage": float(np.mean([max(e.coverage) for e in episodes])),
                  **(failure_counts(failed) if failed else {"failed": 0})}
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    shown = sorted(failed, key=lambda e: max(e.coverage))  # the worst first, then the near misses
    shown = shown[:1] + shown[-(args.show - 1):] if len(shown) > args.show else shown
    pairs = [(e, run_expert(e.seed, args.every)) for e in shown]
    if pairs:
        draw(pairs, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
