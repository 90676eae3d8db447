"""A trainer program's own evaluation of a checkpoint: the ``eval:`` of its config
(docs/trainers.md, "Evaluating a program's checkpoint").

``imf eval CKPT`` / ``imf eval --best DIR`` on a checkpoint whose run folder's config.yaml names
another trainer, and a program trial's ``--final-eval``, run ``eval.command`` (argv, never a
shell) in the program's folder with ``{checkpoint}`` and ``{out}`` (the run's eval/ folder), then
read ``eval.metric`` as the training metric is read. A config without ``eval:`` is refused in one
line; an eval that fails or writes no number is a ProgramEvalError (exit 1) with its log's tail.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from imf.atomic import atomic_write_json
from imf.clock import now_iso
from imf.config import BUILTIN_TRAINER, STDOUT, ProgramConfig, load_program_config, trainer_name
from imf.errors import ConfigError, ProgramEvalError
from imf.store import CONFIG, FINAL_EVAL, read_summary
from imf.train import program

EVAL_DIR = "eval"  # the eval command's {out}, inside the run folder
EVAL_LOG = "program.log"


def program_run_of(path: Path) -> Path | None:
    """The run folder of ``path`` (a checkpoint, or a run folder) when its config.yaml names a
    trainer other than imf's own, else None."""
    for folder in (path, path.parent, path.parent.parent):
        if (folder / CONFIG).is_file():
            return folder if trainer_name(str(folder / CONFIG)) != BUILTIN_TRAINER else None
    return None


def run_config(run_dir: Path) -> ProgramConfig:
    """The program config the run was made with; refused in one line when it names no eval."""
    cfg = load_program_config(str(run_dir / CONFIG), [])
    if cfg.eval is None:
        raise ConfigError(f"trainer '{cfg.trainer}' of {run_dir} names no eval command; add eval.command "
                          "to its config")
    return cfg


def evaluate(checkpoint: Path, run_dir: Path, echo: Callable[[str], None]) -> dict[str, Any]:
    """Run the eval command on ``checkpoint``; the metric it wrote, as written and as imf's score."""
    cfg = run_config(run_dir)
    spec = cfg.eval
    out = (run_dir / EVAL_DIR).resolve()
    out.mkdir(parents=True, exist_ok=True)
    values = {"out": str(out), "seed": str(cfg.seed), "params_file": str(run_dir.resolve() / program.PARAMS_FILE),
              "python": sys.executable, "checkpoint": str(checkpoint.resolve())}
    argv = [program.expand(word, values) for word in spec.command]
    log = out / EVAL_LOG
    log.write_text("")
    echo(f"eval of {checkpoint}: running {argv[0]} in {cfg.workdir} ({len(argv)} words, never a shell)")
    ended = program.run_program(argv, Path(cfg.workdir), program.env_of(cfg, cfg.seed), log, cfg.time_s, echo)
    source = None
    if spec.metric.source != STDOUT:
        source = Path(program.expand(spec.metric.source, values))
        source = source if source.is_absolute() else Path(cfg.workdir) / source
    read = program.read_metric(spec.metric, source, log)
    why = ("over budget" if ended.over_budget else ended.signal_name if ended.signal_name else
           f"exit code {ended.exit_code}" if ended.exit_code else read.problem)
    if why:
        tail = program.tail(log)
        raise ProgramEvalError(f"eval of {checkpoint} failed: {why}" + (f"; {log} ends: {tail}" if tail else ""))
    summary = read_summary(run_dir)
    return {"checkpoint": str(checkpoint), "trial": summary.id if summary else run_dir.name,
            "metric": {"name": spec.metric.name, "goal": spec.metric.goal, "value": read.best},
            "score": spec.metric.sign * read.best, "elapsed_s": round(ended.elapsed_s, 3), "time": now_iso()}


def final_eval(run_dir: Path, checkpoint: Path, echo: Callable[[str], None]) -> dict[str, Any]:
    """``--final-eval`` of a program's trial: the eval, kept as final_eval.json (``mean``: imf's
    higher-is-better score, the report's selection score; ``metric`` as the program wrote it)."""
    result = evaluate(checkpoint, run_dir, echo)
    written = {"mean": result["score"], "se": None, "episodes": None, "per_seed": [],
               "checkpoint": str(checkpoint.resolve().relative_to(run_dir.resolve())),
               "metric": result["metric"], "time": result["time"]}
    atomic_write_json(run_dir / FINAL_EVAL, written)
    return result


def line(result: dict[str, Any]) -> str:
    m = result["metric"]
    return (f"checkpoint {result['checkpoint']} (trial {result['trial']}): {m['name']} {m['value']:g} "
            f"({m['goal']}; score {result['score']:g})")
