"""The ``command`` trainer: any program as an imf trial (docs/trainers.md).

The program gets its params as ``key=value`` words, a JSON file or environment variables, and
its metric is read back with its goal. summary.json and the stores get the same fields as imf's
own trials (config_hash, cell, run_uid, ...); ``best_score`` is imf's higher-is-better score,
the metric times +1 (maximize) or -1 (minimize), so every ranking respects the goal, and the
metric itself is kept as written under ``metric``. An exit code other than 0, no metric, a
value that is no number, NaN or inf, or a run past its budget is never a success.
"""
from __future__ import annotations

import sys
from pathlib import Path
import yaml

from imf import registry
from imf.atomic import atomic_write_json, atomic_write_text
from imf.clock import now_iso
from imf.config import (RUN_ONLY_WORDS, STDOUT, ProgramConfig, check_final_eval, flat_params, load_program_config,
                        parse_json_overrides)
from imf.errors import EXIT_SIGNAL_BASE, OUTCOME_EXIT, ConfigError, ImfError
from imf.store import (CONFIG, LOGS, SUMMARY, Checkpoints, RunLayout, RunLock, RunSummary, cell_hash,
                       checkpoint_hash, default_trial_id, override_pairs, readable_id, trial_hash)
from imf.train import program
from imf.train.metric_watch import MetricWatch, per_step
from imf.train.recording import (Identity, archive_earlier, check_before_run, new_run_uid, record,
                                 store_names, store_root)
from imf.train.trainers import Trainer, TrialRequest
from imf.version import code_version

_NOT_HERE = {"epochs": "--epochs", "device": "--device", "holdout": "--holdout", "time_steps": "--time-steps"}
FINAL_EVAL_ENDS = ("completed", "stopped_early", "diverged")  # a trial with a result to re-score


class CommandTrainer(Trainer):
    """Runs the config's ``command`` (argv, never a shell) as one trial."""

    def check(self, request: TrialRequest) -> None:
        if request.resume:
            from imf.train.program_resume import resume_plan
            resume_plan(request)
        else:
            self.config_of(request)

    def config_of(self, request: TrialRequest) -> ProgramConfig:
        refuse_imf_flags(request)
        patch = parse_json_overrides(request.overrides) if request.overrides else None
        if request.init_from is not None and not Path(request.init_from).is_file():
            raise ConfigError(f"--init-from: checkpoint {request.init_from} does not exist")
        cfg = load_program_config(request.config, request.dotted, patch, request.seed)
        check_patience(cfg, request.patience)
        check_final_eval(cfg, request.final_eval, request.config)
        return cfg

    def run(self, request: TrialRequest) -> int:
        if request.resume:
            from imf.train.program_resume import resume
            return resume(request)
        cfg = self.config_of(request)
        if request.init_from is not None and not cfg.init_from:
            raise ConfigError(f"--init-from: {request.config} has no init_from: words to pass the "
                              "checkpoint to its program")
        identity = identity_of(cfg, request.init_from)
        tid = request.trial_id or default_trial_id(program_id(cfg, request.dotted), identity.config_hash)
        run_dir = (request.out or Path("runs") / tid).resolve()
        stores = store_names(request.stores, cfg.stores)
        for store in stores:
            registry.check("imf.stores", store)
        root = store_root(run_dir, None)
        check_before_run(root, stores, tid, identity, request.hypothesis)
        if request.dry_run:
            print(yaml.safe_dump(cfg.to_dict(), sort_keys=False) + f"trial id: {tid}\nconfig_hash: "
                  f"{identity.config_hash}\nargv: {argv_for(cfg, run_dir, request.init_from)}")
            return 0
        with RunLock.acquire(run_dir, tid):
            files = RunLayout(run_dir)
            archive_earlier(files, root, stores, say)
            summary = _run(cfg, request, tid, run_dir, identity, stores)
            finish(summary, run_dir, root, request.final_eval)
        return exit_code(summary)


def refuse_imf_flags(request: TrialRequest) -> None:
    given = [flag for key, flag in _NOT_HERE.items() if getattr(request, key)]
    if given:
        raise ConfigError(f"{given[0]} is imf's own trainer's; a program's trial takes key=value params, --seed, "
                          "--init-from, --patience, --note, --overrides, --id, --out, --store, --resume, --final-eval")


def finish(summary: RunSummary, run_dir: Path, root: Path, final_eval: int | None) -> None:
    """Record the ended trial in its stores, then (``--final-eval``) score its checkpoint with the
    eval command; a failed eval leaves the trial standing."""
    if summary.stores and summary.status != "interrupted":
        record(root, summary.stores, summary, run_dir)
        say(f"recorded in {', '.join(summary.stores)} under {root}")
    ckpt = summary.checkpoints.best
    if not final_eval or summary.status not in FINAL_EVAL_ENDS or not ckpt:
        return
    from imf.train import program_eval
    try:
        say(program_eval.line(program_eval.final_eval(run_dir, run_dir / ckpt, say)))
    except ImfError as exc:
        print(f"imf: final eval of {run_dir} failed, the trial itself is complete: {exc}; rerun it with "
              "imf eval", file=sys.stderr, flush=True)


def check_patience(cfg: ProgramConfig, patience: int | None) -> None:
    """``--patience N`` needs N >= 1 and a metric that comes value after value."""
    if patience is None:
        return
    if patience < 1:
        raise ConfigError(f"--patience {patience}: give 1 or more values without a new best")
    if not per_step(cfg.metric.source):
        raise ConfigError(f"--patience follows the metric value after value: metric.source "
                          f"{cfg.metric.source!r} is one JSON object; name a JSON-lines log or stdout")


def identity_of(cfg: ProgramConfig, init_from: Path | None) -> Identity:
    config = cfg.identity_dict()
    init_hash = checkpoint_hash(init_from) if init_from is not None else None
    return Identity(trial_hash(config, cfg.seed, init_hash), cell_hash(config, init_hash), init_hash)


def program_id(cfg: ProgramConfig, dotted: list[str]) -> str:
    """A program trial's readable id: ``<name>[-<key><value> per override]-s<seed>``."""
    own = override_pairs(word for word in dotted if not word.startswith(RUN_ONLY_WORDS))
    return readable_id(cfg.name, cfg.seed, own, seed_last=True)


def placeholder_values(cfg: ProgramConfig, run_dir: Path, init_from: Path | None) -> dict[str, str]:
    return {"out": str(run_dir), "seed": str(cfg.seed), "params_file": str(run_dir / program.PARAMS_FILE),
            "init_from": str(Path(init_from).resolve()) if init_from else "", "python": sys.executable,
            "args": ""}


def argv_for(cfg: ProgramConfig, run_dir: Path, init_from: Path | None) -> list[str]:
    return program.argv_of(cfg, placeholder_values(cfg, run_dir, init_from), init_from is not None)


def say(line: str) -> None:
    print(line, flush=True)


def _run(cfg: ProgramConfig, request: TrialRequest, tid: str, run_dir: Path, identity: Identity,
         stores: list[str]) -> RunSummary:
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / CONFIG, yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    atomic_write_json(run_dir / program.PARAMS_FILE, cfg.params)
    summary = RunSummary(id=tid, status="running", init_from=str(request.init_from) if request.init_from else None,
                         warm_started=request.init_from is not None, note=request.note, seed=cfg.seed,
                         overrides=[w for w in request.dotted if not w.startswith(RUN_ONLY_WORDS)],
                         params=flat_params(cfg.params), started=now_iso(), code_version=code_version(),
                         config_hash=identity.config_hash, cell=identity.cell, init_hash=identity.init_hash,
                         run_uid=request.extra.get("run_uid") or new_run_uid(), hypothesis=request.hypothesis,
                         stores=stores, extra={"trainer": cfg.trainer})
    execute(cfg, summary, run_dir, request.init_from, watch_of(cfg, run_dir, request.patience))
    return summary


def execute(cfg: ProgramConfig, summary: RunSummary, run_dir: Path, init_from: Path | None,
            watch: program.Watch | None) -> None:
    """Run the program for ``summary``'s trial (warm from ``init_from``) and conclude it."""
    summary.write(run_dir)
    argv = argv_for(cfg, run_dir, init_from)
    tid = summary.id
    say(f"trial {tid}: running {argv[0]} in {cfg.workdir} ({len(argv)} words, never a shell)")
    ended = program.run_program(argv, Path(cfg.workdir), program.env_of(cfg, cfg.seed),
                                run_dir / program.PROGRAM_LOG, cfg.time_s, say, watch)
    _conclude(summary, cfg, ended, run_dir)
    summary.write(run_dir)
    say(f"trial {tid}: {summary.status}" + (f": {summary.reason}" if summary.reason else "")
         + (f", {cfg.metric.name} {summary.extra['metric']['value']:g} ({cfg.metric.goal})"
            if summary.extra.get("metric", {}).get("value") is not None else "") + f" ({run_dir})")


def metric_path(cfg: ProgramConfig, run_dir: Path) -> Path | None:
    """The metric's file (None for stdout), relative paths from the program's folder."""
    if cfg.metric.source == STDOUT:
        return None
    source = Path(program.expand(cfg.metric.source, placeholder_values(cfg, run_dir, None)))
    return source if source.is_absolute() else Path(cfg.workdir) / source


def watch_of(cfg: ProgramConfig, run_dir: Path, patience: int | None, resumed: bool = False) -> program.Watch | None:
    """The metric followed as it comes (imf/train/metric_watch.py), mirrored into logs.json.txt;
    not a file imf writes itself (summary.json, or logs.json.txt the program writes as its log)."""
    source = metric_path(cfg, run_dir) or run_dir / program.PROGRAM_LOG
    own = {(run_dir / SUMMARY).resolve(), (run_dir / LOGS).resolve()}
    mirror = None if source.resolve() in own else run_dir / LOGS
    if mirror is None and not patience:
        return None
    watch = MetricWatch(cfg.metric, source, mirror, patience, cfg.metric.se)
    if resumed:
        watch.skip_earlier()  # an earlier attempt's values are mirrored already
    return watch.poll


def _conclude(summary: RunSummary, cfg: ProgramConfig, ended: program.Ended, run_dir: Path) -> None:
    """The trial's status, reason, scores and checkpoint from how the program ended."""
    log = run_dir / program.PROGRAM_LOG
    read = program.read_metric(cfg.metric, metric_path(cfg, run_dir), log)
    summary.elapsed_s, summary.finished, summary.epochs_done = round(ended.elapsed_s, 3), now_iso(), read.count
    sign = cfg.metric.sign
    summary.best_score = None if read.best is None else sign * read.best
    summary.last_score = None if read.last is None else sign * read.last
    summary.extra["metric"] = {"name": cfg.metric.name, "goal": cfg.metric.goal, "value": read.best,
                               "last": read.last, **({"se": read.se} if cfg.metric.se else {})}
    summary.status, outcome, why = _verdict(cfg, ended, read)
    summary.extra["outcome"] = outcome
    if summary.status in ("interrupted", "stopped_early"):
        summary.reason = why
    elif summary.status != "completed":
        ends = program.tail(log)
        summary.reason = why + (f"; {program.PROGRAM_LOG} ends: {ends}" if ends else "")
        if summary.status != "diverged":
            summary.best_score = summary.last_score = None  # a failure has no result to rank
    ckpt = _checkpoint(cfg, run_dir)
    summary.checkpoints = Checkpoints(best=ckpt, latest=ckpt)


def _verdict(cfg: ProgramConfig, ended: program.Ended, read: program.MetricRead) -> tuple[str, str, str]:
    """(status, outcome, why): a stop signal, the budget, the exit code, then the metric."""
    if ended.signal_name:
        return "interrupted", "interrupted", ended.signal_name
    if ended.over_budget:
        return "failed", "over budget", f"over budget: ran past budget.time_s {cfg.time_s:g} s and was stopped"
    if ended.exit_code != 0 and not ended.early_stop:
        return "failed", "program failed", f"program failed: exit code {ended.exit_code}"
    if read.problem and read.problem.startswith("non-finite"):
        return "diverged", "non-finite metric", read.problem
    if read.problem:
        return "failed", read.problem.split(":", 1)[0], read.problem
    if ended.early_stop:
        return "stopped_early", "stopped early", ended.early_stop
    return "completed", "completed", ""


def _checkpoint(cfg: ProgramConfig, run_dir: Path) -> str | None:
    """The checkpoint's path relative to the run folder, when the program wrote it there."""
    if not cfg.checkpoint:
        return None
    path = Path(program.expand(cfg.checkpoint, placeholder_values(cfg, run_dir, None)))
    try:
        return str(path.resolve().relative_to(run_dir)) if path.is_file() else None
    except ValueError:
        return None


def exit_code(summary: RunSummary) -> int:
    if summary.status == "interrupted":
        import signal
        return EXIT_SIGNAL_BASE + getattr(signal.Signals, summary.reason or "SIGTERM", signal.SIGTERM).value
    if summary.status not in ("completed", "stopped_early"):
        print(f"imf: trial {summary.id} {summary.status}: {summary.reason}", file=sys.stderr, flush=True)
    return OUTCOME_EXIT.get(summary.status, 1)
