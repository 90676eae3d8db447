"""Which trainer a config names, and the typed config of a program run as a trial.

``trainer:`` in a config chooses an ``imf.trainers`` plugin; a config without it (every preset,
every run folder's config.yaml) is imf's own trainer. Any other trainer takes a *program
config*: the program's argv with placeholders, the params that overrides and grids change, how
params reach the program, the metric with its goal and where it is read, the checkpoint, the
warm-start words and the budget (docs/trainers.md). Everything is checked here, before a run
folder exists: a bad field is a ConfigError naming the field and the value.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imf.config.presets import deep_merge, load_preset_dict
from imf.config.values import parse_scalar
from imf.errors import ConfigError

BUILTIN_TRAINER = "imf"
PLACEHOLDERS = ("out", "seed", "args", "params_file", "init_from", "python")
EVAL_PLACEHOLDERS = ("out", "seed", "params_file", "python", "checkpoint")  # out: the run's eval/ folder
ARGS_MODES = ("hydra", "json", "env")
GOALS = ("minimize", "maximize")
LINE_PICKS = ("best", "last")
STDOUT = "stdout"
# dotted words a sweep adds to every trial that say where it ran, not what it learned
RUN_ONLY_WORDS = ("sweep.", "training.device=")
KEYS = ("trainer", "name", "command", "params", "args", "metric", "checkpoint", "init_from",
        "budget", "stores", "training", "workdir", "eval")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def trainer_name(config: str | None) -> str:
    """The trainer ``config`` (a preset name or a YAML path) names; imf's own without the key."""
    if not config or Path(config).suffix not in (".yaml", ".yml") or not Path(config).is_file():
        return BUILTIN_TRAINER
    data = load_preset_dict(config)  # with its base: chain, so a child of a program config is one too
    name = data.get("trainer", BUILTIN_TRAINER) if isinstance(data, dict) else BUILTIN_TRAINER
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{config}: trainer: expected a trainer's name (imf plugins), got {name!r}")
    return name


@dataclass(frozen=True)
class MetricSpec:
    name: str
    goal: str  # minimize | maximize
    source: str  # a path template ("{out}/summary.json": a JSON key; other files: JSON lines) or "stdout"
    lines: str = "best"  # JSON lines and stdout: the best value by the goal, or the last
    se: str | None = None  # JSON lines: the key of a line holding its value's standard error

    @property
    def sign(self) -> float:
        """+1 when higher is better, -1 when lower is: imf's scores are higher-is-better."""
        return 1.0 if self.goal == "maximize" else -1.0


@dataclass(frozen=True)
class EvalSpec:
    """``eval:``: the program that scores a checkpoint (``imf eval``, ``--final-eval``)."""

    command: list[str]  # argv with {checkpoint}, {out} (the run's eval/ folder), {seed}, {python}, ...
    metric: MetricSpec

    def to_dict(self) -> dict[str, Any]:
        m = self.metric
        return {"command": list(self.command),
                "metric": {"name": m.name, "goal": m.goal, "source": m.source, "lines": m.lines}}


@dataclass
class ProgramConfig:
    """A program run as a trial (``trainer: command`` and trainers built on it)."""

    trainer: str
    name: str
    command: list[str]
    params: dict[str, Any]
    metric: MetricSpec
    args: str = "hydra"
    checkpoint: str | None = None
    init_from: list[str] = field(default_factory=list)
    time_s: float | None = None
    stores: list[str] = field(default_factory=lambda: ["scoreboard", "iteration-log"])
    seed: int = 0
    workdir: str = "."  # the program's working folder: the config file's, unless it names one
    eval: EvalSpec | None = None  # how the program scores a checkpoint, if it can

    def to_dict(self) -> dict[str, Any]:
        """config.yaml as a run folder keeps it: the seed under training.seed (run-only)."""
        m = self.metric
        return {"trainer": self.trainer, "name": self.name, "command": list(self.command),
                "params": copy.deepcopy(self.params), "args": self.args,
                "metric": {"name": m.name, "goal": m.goal, "source": m.source, "lines": m.lines,
                           **({"se": m.se} if m.se else {})},
                "checkpoint": self.checkpoint, "init_from": list(self.init_from),
                "budget": {"time_s": self.time_s}, "logging": {"stores": list(self.stores)},
                "training": {"seed": self.seed}, "workdir": self.workdir,
                **({"eval": self.eval.to_dict()} if self.eval else {})}

    def identity_dict(self) -> dict[str, Any]:
        """What a trial's identity hashes: the config but its eval command (scoring a checkpoint
        changes nothing the program learns)."""
        data = self.to_dict()
        data.pop("eval", None)
        return data


def load_program_config(config: str, dotted: list[str], params_patch: dict[str, Any] | None = None,
                        seed: int | None = None) -> ProgramConfig:
    """The program config in ``config`` with ``params_patch`` deep-merged into its params and
    the ``key=value`` words (keys under params) set; everything checked."""
    data = load_preset_dict(config)
    if not isinstance(data, dict):
        raise ConfigError(f"{config}: expected a YAML mapping")
    unknown = sorted(set(data) - set(KEYS) - {"logging"})
    if unknown:
        raise ConfigError(f"{config}: unknown key '{unknown[0]}' in a program config; keys: {', '.join(KEYS)}")
    params = _mapping(data.get("params", {}), "params")
    if params_patch:
        params = deep_merge(params, _mapping(params_patch, "--overrides"))
    for word in dotted:
        if not word.startswith(RUN_ONLY_WORDS):
            set_param(params, word)
    cfg = ProgramConfig(
        trainer=str(data.get("trainer")), name=_name(data.get("name"), config),
        command=_words(data.get("command"), "command", required=True), params=params,
        metric=_metric(data.get("metric")), args=_choice(data.get("args", "hydra"), "args", ARGS_MODES),
        checkpoint=_optional_text(data.get("checkpoint"), "checkpoint"),
        init_from=_words(data.get("init_from", []), "init_from"),
        time_s=_budget(data.get("budget")), stores=_stores(data),
        seed=_seed(seed if seed is not None else (data.get("training") or {}).get("seed", 0)),
        workdir=_workdir(data.get("workdir"), config))
    cfg.eval = _eval(data.get("eval"), cfg.metric)
    check_placeholders(cfg)
    return cfg


def check_final_eval(cfg: ProgramConfig, final_eval: int | None, where: str | Path) -> None:
    """``--final-eval N`` runs the config's eval command once (N >= 1; it has no episodes of imf's)."""
    if final_eval is None:
        return
    if final_eval < 1:
        raise ConfigError(f"--final-eval {final_eval}: give 1 or more")
    if cfg.eval is None:
        raise ConfigError(f"--final-eval: trainer '{cfg.trainer}' of {where} names no eval command; add "
                          "eval.command to its config")


def set_param(params: dict[str, Any], word: str) -> None:
    """``model.hidden=128`` (or ``params.model.hidden=128``) into ``params``: the key must be one
    the config's params already hold, the value of a compatible kind."""
    key, sep, raw = word.partition("=")
    key = key.strip().removeprefix("params.")
    if not sep or not key:
        raise ConfigError(f"override '{word}': expected key=value with a key under params")
    value = param_value(params, key, raw, f"override '{word}'")
    *path, leaf = key.split(".")
    node = params
    for part in path:
        node = node[part]
    node[leaf] = value


def param_value(params: dict[str, Any], key: str, raw: str, where: str) -> Any:
    """``raw`` as the value of the params setting ``key`` (checked to be one) would hold it."""
    check_param_key(params, key, where)
    node: Any = params
    for part in key.split("."):
        node = node[part]
    return _compatible(node, parse_scalar(raw), where)


def check_param_key(params: dict[str, Any], key: str, where: str) -> None:
    """ConfigError unless ``key`` (dotted) names a setting of ``params``."""
    node: Any = params
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"{where}: '{key}' is not under params (keys: "
                              f"{', '.join(flat_keys(params)) or 'none'})")
        node = node[part]
    if isinstance(node, dict):
        raise ConfigError(f"{where}: '{key}' is a section of params; set one of its keys")


def flat_keys(params: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in params.items():
        out += flat_keys(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [f"{prefix}{key}"]
    return out


def flat_params(params: dict[str, Any]) -> dict[str, Any]:
    """``{"optim": {"lr": 0.1}}`` -> ``{"optim.lr": 0.1}`` (an empty section is kept as {})."""
    out: dict[str, Any] = {}
    for key in flat_keys(params):
        node: Any = params
        for part in key.split("."):
            node = node[part]
        out[key] = node
    return out


def _compatible(old: Any, new: Any, word: str) -> Any:
    """``new`` where it may replace ``old``: numbers for numbers (an int where an int was;
    YAML's ``1e-4`` text read as the number), flags for flags, anything for text or null."""
    number = (int, float)
    if isinstance(old, number) and not isinstance(old, bool) and isinstance(new, str):
        try:
            new = float(new)
        except ValueError:
            pass
    if isinstance(old, bool) or isinstance(new, bool):
        if isinstance(old, bool) != isinstance(new, bool) and old is not None:
            raise ConfigError(f"{word}: expected true or false like {old!r}, got {new!r}")
        return new
    if isinstance(old, number):
        if not isinstance(new, number) or (isinstance(new, float) and not math.isfinite(new)):
            raise ConfigError(f"{word}: expected a finite number like {old!r}, got {new!r}")
        return float(new) if isinstance(old, float) or not float(new).is_integer() else int(new)
    if isinstance(old, str) and not isinstance(new, str):
        return str(new) if not isinstance(new, (list, dict)) else new
    return new


def check_placeholders(cfg: ProgramConfig) -> None:
    """Every ``{...}`` is a known placeholder; ``{init_from}`` only in the warm-start words;
    ``{args}`` a whole word; params reach the program as ``args`` says."""
    for where, words in (("command", cfg.command), ("init_from", cfg.init_from),
                         ("checkpoint", [cfg.checkpoint or ""]), ("metric.source", [cfg.metric.source])):
        for word in words:
            for name in _PLACEHOLDER.findall(word):
                if name not in PLACEHOLDERS:
                    raise ConfigError(f"{where}: unknown placeholder {{{name}}} in {word!r}; known: "
                                      + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS))
                if name == "init_from" and where != "init_from":
                    raise ConfigError(f"{where}: {{init_from}} belongs in init_from: (the words added "
                                      f"only for a warm start), found in {word!r}")
                if name == "args" and (where != "command" or word != "{args}"):
                    raise ConfigError(f"{where}: {{args}} must be a whole word of command, got {word!r}")
    for word in (cfg.eval.command + [cfg.eval.metric.source]) if cfg.eval else []:
        for name in _PLACEHOLDER.findall(word):
            if name not in EVAL_PLACEHOLDERS:
                raise ConfigError(f"eval: unknown placeholder {{{name}}} in {word!r}; known: "
                                  + ", ".join(f"{{{p}}}" for p in EVAL_PLACEHOLDERS))
    if cfg.init_from and not any("{init_from}" in w for w in cfg.init_from):
        raise ConfigError(f"init_from: {cfg.init_from!r} has no {{init_from}} for the checkpoint's path")
    joined = " ".join(cfg.command)
    if cfg.args == "hydra" and "{args}" not in cfg.command:
        raise ConfigError("args: hydra passes params as key=value words at {args}: add \"{args}\" to command")
    if cfg.args == "json" and "{params_file}" not in joined:
        raise ConfigError("args: json passes params in a file: add \"{params_file}\" to command")


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of settings, got {value!r}")
    return copy.deepcopy(value)


def _name(value: Any, config: str) -> str:
    name = Path(config).stem if value is None else value
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ConfigError(f"name: expected letters, digits, '.', '_' and '-' (a folder name), got {name!r}")
    return name


def _words(value: Any, where: str, required: bool = False) -> list[str]:
    if value is None and required:
        raise ConfigError(f"{where}: required, the program's argv as a list of words "
                          "(for example [python, train.py, --out, \"{out}\", \"{args}\"])")
    if value is None or value == [] and not required:
        return []
    if isinstance(value, str):
        raise ConfigError(f"{where}: expected a list of words (argv; never a shell line), got the "
                          f"string {value!r}")
    if not isinstance(value, list) or not value or not all(isinstance(w, (str, int, float)) for w in value):
        raise ConfigError(f"{where}: expected a non-empty list of words, got {value!r}")
    return [str(w) for w in value]


def _metric(value: Any) -> MetricSpec:
    if not isinstance(value, dict):
        raise ConfigError(f"metric: required, a mapping {{name, goal, source}}, got {value!r}")
    unknown = sorted(set(value) - {"name", "goal", "source", "lines", "se"})
    if unknown:
        raise ConfigError(f"metric: unknown key '{unknown[0]}'; keys: name, goal, source, lines, se")
    name, goal = value.get("name"), value.get("goal")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"metric.name: expected the metric's name, got {name!r}")
    if goal is None:
        raise ConfigError(f"metric.goal: required for metric {name!r}: minimize or maximize")
    source = value.get("source", STDOUT)
    if not isinstance(source, str) or not source:
        raise ConfigError(f"metric.source: expected a file path template or 'stdout', got {source!r}")
    se = value.get("se")
    if se is not None and (not isinstance(se, str) or not se or source == STDOUT or source.endswith(".json")):
        raise ConfigError(f"metric.se: expected the key of a JSON-lines log's line that holds the value's "
                          f"standard error (metric.source a JSON-lines log), got {se!r} with source {source!r}")
    return MetricSpec(name, _choice(goal, "metric.goal", GOALS), source,
                      _choice(value.get("lines", "best"), "metric.lines", LINE_PICKS), se)


def _eval(value: Any, metric: MetricSpec) -> EvalSpec | None:
    """``eval: {command: [...], metric: {name, goal, source}}``; the goal defaults to the
    training metric's, the source to stdout."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"command", "metric"}:
        raise ConfigError(f"eval: expected {{command: [argv with {{checkpoint}}], metric: {{name, goal, "
                          f"source}}}}, got {value!r}")
    command = _words(value.get("command"), "eval.command", required=True)
    spec = value.get("metric") or {}
    if not isinstance(spec, dict):
        raise ConfigError(f"eval.metric: expected a mapping {{name, goal, source}}, got {spec!r}")
    try:
        scored = _metric({"name": metric.name, "goal": metric.goal, **spec})
    except ConfigError as exc:
        raise ConfigError(f"eval.{exc}") from None
    return EvalSpec(command, scored)


def _choice(value: Any, where: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{where}: expected one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _optional_text(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a path template, got {value!r}")
    return value


def _budget(value: Any) -> float | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"time_s"}:
        raise ConfigError(f"budget: expected {{time_s: SECONDS}}, got {value!r}")
    time_s = value.get("time_s")
    if time_s is None:
        return None
    if isinstance(time_s, bool) or not isinstance(time_s, (int, float)) or not 0 < time_s < math.inf:
        raise ConfigError(f"budget.time_s: expected seconds > 0, got {time_s!r}")
    return float(time_s)


def _stores(data: dict[str, Any]) -> list[str]:
    stores = (data.get("logging") or {}).get("stores", data.get("stores", ["scoreboard", "iteration-log"]))
    if not isinstance(stores, list) or not all(isinstance(s, str) for s in stores):
        raise ConfigError(f"stores: expected a list of store names, got {stores!r}")
    return list(stores)


def _workdir(value: Any, config: str) -> str:
    here = Path(config).resolve().parent
    if value is None:
        return str(here)
    if not isinstance(value, str) or not (here / value).is_dir():
        raise ConfigError(f"workdir: expected an existing folder, got {value!r}")
    return str((here / value).resolve())


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"seed: expected an integer >= 0, got {value!r}")
    return value
