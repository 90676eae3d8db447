"""`imf trial` and `imf eval`, and what they do between parsing and printing (the training
stack is imported lazily, so `imf --help`, `imf sweep` and `imf status` never import torch)."""
from __future__ import annotations

import json
import signal
from pathlib import Path

import typer

from imf.cli.app import app
from imf.cli.options import Command, complete_config_args, complete_store

from imf.config import (DEFAULT_PRESET, RECOMMENDED_EPISODES, Config, check_episodes, final_eval_seeds,
                        holdout_seeds, load_config, load_resolved, parse_json_overrides, split_config_args)
from imf.errors import EXIT_FAILED, EXIT_SIGNAL_BASE, OUTCOME_EXIT, ConfigError, ImfError, SweepError
from imf.registry import fill_options
from imf.store import (CONFIG, ID_HASH_CHARS, SUMMARY, RunLock, RunSummary, default_trial_id, params_of,
                       read_json_object, readable_id)
from imf.sweep import NAME_RE
from imf.seeds import HOLDOUT, SELECTION, TEST_START

# the parts of a default trial id (imf.store.default_trial_id), in words a narrow help column can wrap
ID_PARTS = (f"the config's name, <mask>, e<n_emb>, l<n_layer>, s<seed> and the first {ID_HASH_CHARS} hex "
            "of the trial hash")


@app.command(cls=Command, context_settings={"allow_extra_args": False})
def trial(
    args: list[str] = typer.Argument(None, help="CONFIG (a preset or YAML path), then key=value dotted overrides.",
                                     autocompletion=complete_config_args),
    trial_id: str = typer.Option(None, "--id", help=f"Trial id (default: {ID_PARTS}, joined by '-', "
                                                    "e.g. smoke-causal-e64-l2-s42-3fa9c1)."),
    out: Path = typer.Option(None, "--out", help="The trial's run folder (default runs/<id>)."),
    seed: int = typer.Option(None, "--seed", help="Seed for torch, numpy and random (training.seed)."),
    epochs: int = typer.Option(None, "--epochs", help="Number of epochs (training.num_epochs)."),
    init_from: Path = typer.Option(None, "--init-from", help="Warm start from this checkpoint (strict=False)."),
    patience: int = typer.Option(None, "--patience", help="Stop after N rollouts without a new best (a program's trial: N values of its metric, by its goal)."),
    note: str = typer.Option("", "--note", help="A note kept in the summary and the result stores."),
    overrides: str = typer.Option(None, "--overrides", help="JSON object deep-merged into the config."),
    device: str = typer.Option(None, "--device", help="auto, cpu, cuda or cuda:N (training.device)."),
    store: list[str] = typer.Option(None, "--store", help="Result store to record in (repeatable); 'none' for none.",
                                   autocompletion=complete_store),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its latest.pt (a program's run: its program again, from the checkpoint it wrote)."),
    final_eval: int = typer.Option(None, "--final-eval", help=f"After training, re-score best.pt (eval.final_checkpoint=latest: latest.pt) on N selection episodes (seeds {SELECTION.text}; {RECOMMENDED_EPISODES} recommended) into final_eval.json (a program's trial: its config's eval command, once)."),
    holdout: bool = typer.Option(False, "--holdout", help=f"With --final-eval N: also score that checkpoint on N holdout seeds ({HOLDOUT.text}; for claims), one look appended to holdout.json."),
    hypothesis: str = typer.Option(None, "--hypothesis", help="The iteration log's hypothesis this trial tests (H3): kept in its records; imf log conclude cites it."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the resolved config, its difference from the preset, the parameter count and the id; run nothing."),
    time_steps: int = typer.Option(None, "--time-steps", help="With --dry-run: time N training steps on random inputs of the trial's shapes, on this machine."),
) -> None:
    """One run: config + overrides -> train -> score in the simulator -> checkpoints, logs, stores
    (or, for a config with ``trainer:``, that trainer's run: docs/trainers.md)."""
    trial_command(args or [], trial_id=trial_id, out=out, seed=seed, epochs=epochs, init_from=init_from,
                  patience=patience, note=note, overrides=overrides, device=device, stores=store,
                  resume=resume, final_eval=final_eval, holdout=holdout, hypothesis=hypothesis,
                  dry_run=dry_run, time_steps=time_steps)


@app.command("eval", cls=Command)
def eval_(
    checkpoint: Path = typer.Argument(None, help="A checkpoint (.pt) to score (a program's: by its config's eval command)."),
    best: Path = typer.Option(None, "--best", help="Score the best checkpoint of the scoreboard in this folder."),
    n_test: int = typer.Option(None, "--n-test", help="Number of test episodes (default: the checkpoint's eval.n_test)."),
    start_seed: int = typer.Option(None, "--start-seed", help=f"First test seed (default {TEST_START})."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda or cuda:N."),
    workers: int = typer.Option(None, "--workers", help="Simulator worker processes (default: the config's)."),
    noise_seed: int = typer.Option(None, "--noise-seed", help="Seed of the sampling noise (default: the trial's training.seed, as in its rollouts)."),
    holdout: bool = typer.Option(False, "--holdout", help=f"Score on the holdout seeds ({HOLDOUT.text}; --n-test of them, default {RECOMMENDED_EPISODES}), for a claim; the look is appended to the run's holdout.json."),
    action_steps: int = typer.Option(None, "--action-steps", help="Execute the first K predicted actions before planning again (1..horizon - n_obs_steps + 1 of the checkpoint; default its policy.n_action_steps)."),
    sample_steps: int = typer.Option(None, "--sample-steps", help="Sample each plan in N steps instead of the objective's own setting (objective.sample_steps; ddpm: its options.steps): the same weights."),
    noise_scale: float = typer.Option(None, "--noise-scale", help="Start each plan from this standard deviation of noise instead of the objective's (objective.noise_scale; flow-type objectives): the same weights."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Score a checkpoint on the test seeds (or, with --holdout, the holdout seeds): score, success rate, per-seed scores."""
    eval_command(checkpoint, best=best, n_test=n_test, start_seed=start_seed, device=device,
                 workers=workers, as_json=as_json, noise_seed=noise_seed, holdout=holdout,
                 action_steps=action_steps, sample_steps=sample_steps, noise_scale=noise_scale)


def trial_command(args: list[str], **kwargs) -> None:
    """The config's trainer (``trainer:``; imf's own without it) runs the trial, found through
    the ``imf.trainers`` plugins; its return value is the exit code."""
    from imf import registry
    from imf.config import BUILTIN_TRAINER, trainer_name
    from imf.train import TrialRequest

    preset, dotted = split_config_args(args)
    request = TrialRequest(config=preset or DEFAULT_PRESET, dotted=dotted, **kwargs)
    request.extra["args"] = list(args)
    name = trainer_name(preset)
    if request.resume and preset is None and request.out is not None:  # the run folder's trainer resumes it
        name = trainer_name(str(request.out / CONFIG)) if (request.out / CONFIG).is_file() else name
        request.config = str(request.out / CONFIG) if name != BUILTIN_TRAINER else request.config
    trainer = registry.get("imf.trainers", name)()
    trainer.check(request)
    code = trainer.run(request)
    if code:
        raise typer.Exit(code)


class ImfTrainer:
    """imf's own PushT trainer as the built-in ``imf`` plugin of ``imf.trainers``."""

    def check(self, request) -> None:
        if request.overrides is not None:
            parse_json_overrides(request.overrides)

    def run(self, request) -> int:
        fields = {k: v for k, v in vars(request).items() if k not in ("config", "dotted", "extra", "out",
                                                                      "stores")}
        imf_trial_command(request.extra.get("args", []), out=request.out, stores=request.stores, **fields)
        return 0


def imf_trial_command(args: list[str], *, trial_id: str | None, out: Path | None, seed: int | None,
                  epochs: int | None, init_from: Path | None, patience: int | None, note: str,
                  overrides: str | None, device: str | None, stores: list[str] | None,
                  resume: bool, final_eval: int | None = None, holdout: bool = False,
                  hypothesis: str | None = None, dry_run: bool = False, time_steps: int | None = None) -> None:
    from imf.train import TrialOptions, identity_of, run_trial

    preset, dotted = split_config_args(args)
    if hypothesis is not None:
        hypothesis = check_hypothesis(hypothesis)
    flags = [f"training.{k}={v}" for k, v in (("seed", seed), ("num_epochs", epochs),
                                                ("patience", patience), ("device", device)) if v is not None]
    if resume:
        if out is None:
            raise ConfigError("--resume needs --out RUN_DIR, the run folder to continue")
        if preset or dotted or overrides or flags:
            raise ConfigError(f"--resume continues the run as configured in {out}/config.yaml; "
                              "drop the config and overrides")
        cfg = load_resolved(out / CONFIG)
        kept = _resumed_run(out, trial_id, note, init_from, hypothesis)
        tid, note, dotted, init_from = kept.id, kept.note, kept.overrides, Path(kept.init_from) if kept.init_from else None
        hypothesis, stores = kept.hypothesis, kept.stores if kept.stores is not None else stores
    else:
        cfg = load_config(preset or DEFAULT_PRESET, dotted + flags, overrides)
        if init_from is not None and not init_from.is_file():
            raise ConfigError(f"--init-from: checkpoint {init_from} does not exist")
        fill_options(cfg)  # the id's hash covers the plugins' options as config.yaml records them
        identity = identity_of(cfg, init_from)
        readable = readable_id(cfg.name, cfg.training.seed, params=params_of(cfg))
        tid = check_trial_id(trial_id if trial_id is not None else default_trial_id(readable, identity.config_hash))
        dotted += flags
    if dry_run:
        refuse_flags({"--resume": resume}, "--dry-run shows a new trial's plan")
        _dry_run(cfg, preset or DEFAULT_PRESET, tid, identity, time_steps)
        return
    if time_steps is not None:
        raise ConfigError("--time-steps times a step for --dry-run; add --dry-run")
    run_dir = out or _inside(Path("runs"), tid)
    if holdout and final_eval is None:
        raise ConfigError("--holdout scores best.pt on as many holdout seeds as --final-eval N "
                          f"gives selection seeds: add --final-eval N ({RECOMMENDED_EPISODES} recommended)")
    if final_eval is not None:  # a bad N fails before training starts
        final_eval_seeds(final_eval, cfg.eval)
        if holdout:
            holdout_seeds(final_eval, cfg.eval, flag="--final-eval (with --holdout)")
    opts = TrialOptions(trial_id=tid, run_dir=run_dir, init_from=init_from, note=note,
                        overrides=dotted, stores=stores if resume else stores or None, resume=resume,
                        hypothesis=hypothesis, run_uid=kept.run_uid if resume else None,
                        identity=None if resume else identity)
    with RunLock.acquire(run_dir, tid):  # held through the final eval as well
        summary = run_trial(cfg, opts)
        code = exit_code_of(summary["status"], summary.get("reason") or "")
        if summary["status"] in ("completed", "stopped_early", "diverged") and final_eval is not None:
            _final_eval(run_dir, final_eval, cfg, holdout)
        if code:
            raise typer.Exit(code)


def _dry_run(cfg: Config, preset: str, tid: str, identity, time_steps: int | None) -> None:
    from imf.train import dry_run_text, step_seconds
    if time_steps is not None and not 1 <= time_steps <= 100:
        raise ConfigError(f"--time-steps {time_steps}: expected 1..100")
    typer.echo(dry_run_text(cfg, preset, tid, identity))
    if time_steps is not None:
        typer.echo(f"measured step: {step_seconds(cfg, time_steps):.4f} s (median of {time_steps} "
                   f"training steps at batch {cfg.training.batch_size}, random inputs, this machine)")


def exit_code_of(status: str, reason: str) -> int:
    """The process's exit code for a trial that ended ``status`` (imf/errors.py's table)."""
    if status == "interrupted":  # 128 + the signal, as if it had killed us
        return EXIT_SIGNAL_BASE + getattr(signal.Signals, reason, signal.SIGTERM).value
    return OUTCOME_EXIT.get(status, EXIT_FAILED)


def check_hypothesis(text: str) -> str:
    """``H3`` (or ``h3``, ``3``) as the iteration log numbers its blocks."""
    number = text.strip().upper().removeprefix("H")
    if not number.isdigit() or int(number) < 1:
        raise ConfigError(f"--hypothesis {text!r}: expected a block id of the iteration log such as H3")
    return f"H{int(number)}"


def refuse_flags(flags: dict[str, object], why: str) -> None:
    """SweepError naming each flag of ``flags`` that was given (a true value): ``why``; drop them."""
    given = [flag for flag, value in flags.items() if value]
    if given:
        raise SweepError(f"{why}; drop {', '.join(given)}")


def _final_eval(run_dir: Path, n: int, cfg: Config, holdout: bool) -> None:
    """Re-score the final checkpoint (eval.final_checkpoint) on selection seeds (and with ``holdout``
    on the holdout seeds); a failure here leaves the finished training standing."""
    from imf.train import holdout_look, run_final_eval

    try:
        written = run_final_eval(run_dir, n, cfg.eval, device=cfg.training.device, echo=typer.echo)
        if holdout and written is not None:
            holdout_look(run_dir / written["checkpoint"], n, device=cfg.training.device, echo=typer.echo)
    except (ImfError, RuntimeError, OSError) as exc:
        typer.echo(f"imf: final eval of {run_dir} failed, the trial itself is complete: "
                   f"{' '.join(str(exc).split())}; rerun it with imf eval", err=True)


def check_trial_id(tid: str) -> str:
    """A trial id names a folder: ``[A-Za-z0-9._-]+`` without a leading dot or dash."""
    if not NAME_RE.match(tid):
        raise ConfigError(f"--id {tid!r}: a trial id is [A-Za-z0-9._-]+ and starts with a letter "
                          f"or digit")
    return tid


def _inside(root: Path, name: str) -> Path:
    """``root/name``, refused unless it resolves to a folder directly inside ``root``."""
    path = root / name
    if path.resolve().parent != root.resolve():
        raise ConfigError(f"--id {name!r}: the run folder {path} would not be inside {root}")
    return path


def _resumed_run(out: Path, trial_id: str | None, note: str, init_from: Path | None,
                 hypothesis: str | None) -> RunSummary:
    """The summary of the run in ``out``: its id, note, overrides, warm start, hypothesis and
    stores are the resume's."""
    try:
        summary = RunSummary.from_dict(read_json_object(out / SUMMARY))
    except ValueError as exc:
        raise ConfigError(f"--resume: {exc}") from None
    tid = summary.id
    if not tid:
        raise ConfigError(f"--resume: {out / SUMMARY} names no trial id")
    if trial_id is not None and trial_id != tid:
        raise ConfigError(f"--resume: the run in {out} is trial {tid!r}; drop --id {trial_id!r}")
    if note or init_from is not None or hypothesis is not None:
        raise ConfigError(f"--resume continues trial {tid!r} with its own note, warm start and "
                          "hypothesis; drop --note, --init-from and --hypothesis")
    return summary


def eval_command(checkpoint: Path | None, *, best: Path | None, n_test: int | None,
                 start_seed: int | None, device: str, workers: int | None, as_json: bool,
                 noise_seed: int | None = None, holdout: bool = False,
                 action_steps: int | None = None, sample_steps: int | None = None,
                 noise_scale: float | None = None) -> None:
    from imf.train import best_checkpoint, check_options, evaluate_checkpoint, holdout_look, pick_device

    if (checkpoint is None) == (best is None):
        raise ConfigError("imf eval: give a checkpoint path or --best DIR (one of the two)")
    if _program_eval(checkpoint if checkpoint is not None else best_checkpoint(best), as_json,
                     {"--n-test": n_test, "--start-seed": start_seed, "--workers": workers, "--noise-seed": noise_seed,
                      "--holdout": holdout, "--action-steps": action_steps, "--sample-steps": sample_steps,
                      "--noise-scale": noise_scale, "--device": device != "auto"}):
        return
    episodes = RECOMMENDED_EPISODES if n_test is None else n_test
    if holdout:
        refuse_flags({"--start-seed": start_seed is not None, "--workers": workers is not None,
                      "--noise-seed": noise_seed is not None, "--action-steps": action_steps is not None,
                      "--sample-steps": sample_steps is not None, "--noise-scale": noise_scale is not None},
                     "--holdout scores on the holdout seeds with the checkpoint's own settings")
        check_episodes(episodes, "--holdout --n-test", HOLDOUT)
        pick_device(device, source="--device")  # a bad device fails before a look is begun
    else:
        check_options(n_test, start_seed, workers, action_steps, sample_steps, noise_scale)  # the numbers first, then the file
    path = checkpoint if checkpoint is not None else best_checkpoint(best)
    if holdout:
        look = holdout_look(path, episodes, device=device, echo=(lambda _: None) if as_json else typer.echo)
        if as_json:
            typer.echo(json.dumps(look, indent=2))
        return
    result = evaluate_checkpoint(path, n_test=n_test, start_seed=start_seed, device=device,
                                 n_workers=workers, noise_seed=noise_seed, action_steps=action_steps,
                                 sample_steps=sample_steps, noise_scale=noise_scale)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    typer.echo(f"checkpoint {result['checkpoint']} (trial {result['trial']}, "
               f"epoch {_epoch_shown(result['epoch'])})")
    typer.echo(f"test_mean_score {result['test_mean_score']:.4f}  success rate "
               f"{result['test_success_rate']:.2f}  over {result['n_test']} seeds from {result['start_seed']}, "
               f"{result['action_steps']} actions executed a plan"
               + (f", {sample_steps} sampling steps a plan" if sample_steps is not None else "")
               + (f", starting noise x {noise_scale:g}" if noise_scale is not None else ""))
    scores = "  ".join(f"{s}:{v:.3f}" for s, v in result["per_seed"].items())
    typer.echo(f"per seed: {scores}")


def _program_eval(path: Path, as_json: bool, imf_flags: dict[str, object]) -> bool:
    """A trainer program's checkpoint (or run folder) scored by its config's eval command
    (imf/train/program_eval.py); False for imf's own checkpoints."""
    from imf.train import evaluate_program, program_line, program_run_of, run_config

    run = program_run_of(Path(path))
    if run is None:
        return False
    refuse_flags({k: v is not None and v is not False for k, v in imf_flags.items()},
                 f"{run} is a program's run: its eval command takes no imf eval settings")
    run_config(run)  # refused in one line when it names no eval command
    if Path(path).is_dir():
        summary = RunSummary.from_dict(read_json_object(run / SUMMARY)) if (run / SUMMARY).is_file() else None
        if summary is None or not summary.checkpoints.best or not (run / summary.checkpoints.best).is_file():
            raise ConfigError(f"imf eval: the run {run} has no checkpoint (its summary.json names none)")
        path = run / summary.checkpoints.best
    result = evaluate_program(Path(path), run, (lambda _: None) if as_json else typer.echo)
    typer.echo(json.dumps(result, indent=2) if as_json else program_line(result))
    return True


def _epoch_shown(epoch: int | None) -> str:
    """Checkpoints keep the 0-based epoch index; people count epochs from 1."""
    return "?" if epoch is None else str(epoch + 1)
