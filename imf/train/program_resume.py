"""``imf trial --resume --out RUN`` of a trainer program's trial (docs/trainers.md, "Resuming").

The program runs again in its run folder, as its config.yaml says, for the same trial (id,
identity, note, stores kept): with its ``init_from:`` words naming the checkpoint it wrote,
when it wrote one; from the start when it has not yet. A config without ``checkpoint:`` and
``init_from:`` cannot resume: refused in one line before anything changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from imf.config import RUN_ONLY_WORDS, ProgramConfig, check_final_eval, load_program_config
from imf.errors import ConfigError
from imf.store import CONFIG, SUMMARY, RunLock, RunSummary, read_json_object
from imf.train import command, program
from imf.train.recording import store_names, store_root
from imf.train.trainers import TrialRequest


@dataclass
class ResumePlan:
    run_dir: Path
    cfg: ProgramConfig
    summary: RunSummary
    checkpoint: Path | None  # what the program wrote, passed back with its init_from words


def resume_plan(request: TrialRequest) -> ResumePlan:
    """Everything a resume needs, checked; nothing written."""
    command.refuse_imf_flags(request)
    if request.out is None:
        raise ConfigError("--resume needs --out RUN_DIR, the run folder to continue")
    run_dir = Path(request.out).resolve()
    given = [flag for flag, value in (
        ("key=value overrides", [w for w in request.dotted if not w.startswith(RUN_ONLY_WORDS)]),
        ("--overrides", request.overrides), ("--seed", request.seed is not None), ("--init-from", request.init_from),
        ("--note", request.note), ("--hypothesis", request.hypothesis), ("--patience", request.patience),
        ("--dry-run", request.dry_run)) if value]
    if given:
        raise ConfigError(f"--resume continues the run in {run_dir} as its config.yaml says; drop {', '.join(given)}")
    try:
        summary = RunSummary.from_dict(read_json_object(run_dir / SUMMARY))
    except ValueError as exc:
        raise ConfigError(f"--resume: {exc}") from None
    if request.trial_id is not None and request.trial_id != summary.id:
        raise ConfigError(f"--resume: the run in {run_dir} is trial {summary.id!r}; drop --id {request.trial_id!r}")
    cfg = load_program_config(str(run_dir / CONFIG), [])
    if not cfg.checkpoint or not cfg.init_from:
        raise ConfigError(f"--resume: trainer '{cfg.trainer}' of {run_dir} cannot resume: its config names no "
                          "checkpoint: and init_from: words to continue from; run the trial again instead")
    check_final_eval(cfg, request.final_eval, run_dir)
    ckpt = Path(program.expand(cfg.checkpoint, command.placeholder_values(cfg, run_dir, None)))
    return ResumePlan(run_dir, cfg, summary, ckpt if ckpt.is_file() else None)


def resume(request: TrialRequest) -> int:
    plan = resume_plan(request)
    summary, run_dir = plan.summary, plan.run_dir
    if request.stores is not None and summary.stores is None:
        summary.stores = store_names(request.stores, plan.cfg.stores)
    with RunLock.acquire(run_dir, summary.id):
        summary.status, summary.reason, summary.finished = "running", "", None
        summary.extra["resumes"] = int(summary.extra.get("resumes") or 0) + 1
        summary.extra["resumed_from"] = str(plan.checkpoint) if plan.checkpoint else None
        command.say(f"trial {summary.id}: resuming in {run_dir}" + (
            f" from {plan.checkpoint}" if plan.checkpoint else " from the start (no checkpoint yet)"))
        command.execute(plan.cfg, summary, run_dir, plan.checkpoint,
                        command.watch_of(plan.cfg, run_dir, None, resumed=True))
        command.finish(summary, run_dir, store_root(run_dir, None), request.final_eval)
    return command.exit_code(summary)
