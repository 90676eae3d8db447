"""What the heavier CLI commands do between parsing and printing.

Kept out of cli.py so that ``imf --help``, ``imf sweep`` and ``imf status``
never import torch; these functions import the training stack lazily.
"""
from __future__ import annotations

import json
from pathlib import Path

import typer

from imf.config import default_trial_id, load_config, load_resolved, split_config_args
from imf.errors import ConfigError


def trial_command(args: list[str], *, trial_id: str | None, out: Path | None, seed: int | None,
                  epochs: int | None, init_from: Path | None, patience: int | None, note: str,
                  overrides: str | None, device: str | None, stores: list[str] | None,
                  resume: bool) -> None:
    from imf.train.trial import TrialOptions, run_trial

    preset, dotted = split_config_args(args)
    flags = [f"training.{k}={v}" for k, v in (("seed", seed), ("num_epochs", epochs),
                                                ("patience", patience), ("device", device)) if v is not None]
    if resume:
        if out is None:
            raise ConfigError("--resume needs --out RUN_DIR, the run folder to continue")
        if preset or dotted or overrides or flags:
            raise ConfigError(f"--resume continues the run as configured in {out}/config.yaml; "
                              "drop the config and overrides")
        cfg = load_resolved(out / "config.yaml")
    else:
        cfg = load_config(preset or "pusht_image_imf", dotted + flags, overrides)
    tid = trial_id or default_trial_id(cfg)
    run_dir = out or Path("runs") / tid
    if init_from is not None and not init_from.is_file():
        raise ConfigError(f"--init-from: checkpoint {init_from} does not exist")
    opts = TrialOptions(trial_id=tid, run_dir=run_dir, init_from=init_from, note=note,
                        overrides=dotted + flags, stores=stores or None, resume=resume)
    summary = run_trial(cfg, opts)
    if summary["status"] == "failed":
        raise typer.Exit(1)


def eval_command(checkpoint: Path | None, *, best: Path | None, n_test: int | None,
                 start_seed: int | None, device: str, workers: int | None, as_json: bool,
                 noise_seed: int | None = None) -> None:
    from imf.train.evaluate_checkpoint import best_checkpoint, evaluate_checkpoint

    if (checkpoint is None) == (best is None):
        raise ConfigError("imf eval: give a checkpoint path or --best DIR (one of the two)")
    path = checkpoint if checkpoint is not None else best_checkpoint(best)
    result = evaluate_checkpoint(path, n_test=n_test, start_seed=start_seed, device=device,
                                 n_workers=workers, noise_seed=noise_seed)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    typer.echo(f"checkpoint {result['checkpoint']} (trial {result['trial']}, epoch {result['epoch']})")
    typer.echo(f"test_mean_score {result['test_mean_score']:.4f}  success rate "
               f"{result['test_success_rate']:.2f}  over {result['n_test']} seeds from {result['start_seed']}")
    scores = "  ".join(f"{s}:{v:.3f}" for s, v in result["per_seed"].items())
    typer.echo(f"per seed: {scores}")
