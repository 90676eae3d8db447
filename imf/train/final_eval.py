"""``imf trial --final-eval N``: the trial's best checkpoint re-scored on N fresh seeds.

The best checkpoint is chosen by its score on the test seeds, so that score is optimistic.
After training, the same checkpoint evaluation as ``imf eval`` scores best.pt on seeds no
rollout used (imf/config/eval_seeds.py) and writes ``final_eval.json`` in the run folder::

    {"checkpoint": "checkpoints/best.pt", "episodes": N, "seed_start": S,
     "mean": float, "se": float, "per_seed": [float, ...]}   # per_seed in seed order S..S+N-1
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from imf.atomic import atomic_write_json
from imf.config import EvalConfig
from imf.config.eval_seeds import final_eval_seeds
from imf.stats import standard_error
from imf.store.summary import read_summary

FILENAME = "final_eval.json"


def best_checkpoint_of(run_dir: Path) -> str | None:
    """The best checkpoint named by the run's summary.json (relative to the run), if it exists."""
    summary = read_summary(run_dir)
    best = summary.checkpoints.best if summary else None
    return best if best and (run_dir / best).is_file() else None


def run_final_eval(run_dir: Path, n: int, eval_cfg: EvalConfig, device: str = "auto",
                   echo: Callable[[str], None] = print) -> dict[str, Any] | None:
    """Score the run's best checkpoint on ``n`` fresh seeds and write final_eval.json.

    Returns what was written, or None (and says so) when the run has no best checkpoint.
    """
    from imf.train.evaluate_checkpoint import evaluate_checkpoint  # torch only when it runs

    run_dir = Path(run_dir)
    seeds = final_eval_seeds(n, eval_cfg)
    best = best_checkpoint_of(run_dir)
    if best is None:
        echo(f"final eval skipped: {run_dir} has no best checkpoint (no rollout was scored)")
        return None
    echo(f"final eval: {best} on {n} fresh episodes, seeds {seeds[0]}..{seeds[-1]}")
    result = evaluate_checkpoint(run_dir / best, n_test=n, start_seed=seeds[0], device=device)
    per_seed = [float(result["per_seed"][str(s)]) for s in seeds]
    success = [float(result["per_seed_success"][str(s)]) for s in seeds]
    payload = {"checkpoint": Path(best).as_posix(), "episodes": n, "seed_start": seeds[0],
               "mean": float(result["test_mean_score"]), "se": standard_error(per_seed),
               "success_rate": float(result["test_success_rate"]), "success_se": standard_error(success),
               "per_seed": per_seed, "per_seed_success": success}
    atomic_write_json(run_dir / FILENAME, payload)
    echo(f"final eval: mean {payload['mean']:.4f} +- {payload['se']:.4f} (SE), success rate "
         f"{payload['success_rate']:.3f} +- {payload['success_se']:.3f} over {n} episodes; "
         f"wrote {run_dir / FILENAME}")
    return payload
