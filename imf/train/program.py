"""Running a trainer's program: its argv from the config's placeholders (never a shell), its
output mirrored into program.log, its budget enforced, and its metric read back.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from imf.config import STDOUT, MetricSpec, ProgramConfig, flat_params
from imf.train.metric_watch import metric_key, number_or_text

PROGRAM_LOG = "program.log"  # the program's stdout and stderr, beside imf's own stdout.log
PARAMS_FILE = "params.json"  # the params, for args: json ({params_file}) and for people
KILL_GRACE_S = 10.0  # after SIGTERM, before SIGKILL


@dataclass
class Ended:
    exit_code: int | None  # None: killed by imf (budget or a signal)
    elapsed_s: float
    over_budget: bool = False
    signal_name: str | None = None  # a stop signal imf received and passed on
    early_stop: str | None = None  # why imf stopped it early (--patience), if it did


def param_words(params: dict[str, Any]) -> list[str]:
    """Hydra's ``key=value`` words, one per setting (dotted keys, JSON-like values)."""
    flat = flat_params(params)
    return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in flat.items()]


def expand(word: str, values: dict[str, str]) -> str:
    """One word with its placeholders filled (they were checked when the config was loaded)."""
    return re.sub(r"\{([a-z_]+)\}", lambda m: values[m.group(1)], word)


def argv_of(cfg: ProgramConfig, values: dict[str, str], warm: bool) -> list[str]:
    """The program's argv: ``{args}`` becomes the hydra words (nothing for json and env), the
    warm-start words join only for a warm start."""
    argv: list[str] = []
    for word in cfg.command:
        if word == "{args}":
            argv += param_words(cfg.params) if cfg.args == "hydra" else []
        else:
            argv.append(expand(word, values))
    if warm:
        argv += [expand(word, values) for word in cfg.init_from]
    return argv


def env_of(cfg: ProgramConfig, seed: int) -> dict[str, str]:
    """The environment: imf's plus, for args: env, IMF_PARAMS (JSON) and IMF_PARAM_<KEY> each."""
    env = dict(os.environ, IMF_SEED=str(seed), PYTHONUNBUFFERED="1")
    if cfg.args == "env":
        env["IMF_PARAMS"] = json.dumps(cfg.params)
        for key, value in flat_params(cfg.params).items():
            name = "IMF_PARAM_" + re.sub(r"[^A-Za-z0-9]", "_", key).upper()
            env[name] = value if isinstance(value, str) else json.dumps(value)
    return env


Watch = Callable[[], "str | None"]  # called while the program runs: a reason to stop it early, or None
WATCH_EVERY_S = 0.25


def run_program(argv: list[str], cwd: Path, env: dict[str, str], log: Path, time_s: float | None,
                echo: Callable[[str], None], watch: Watch | None = None) -> Ended:
    """Run ``argv`` in its own session; lines go to ``log`` and ``echo``; past ``time_s``, on
    SIGTERM/SIGINT to imf, or when ``watch`` gives a reason, the program's session is stopped
    (SIGTERM, then SIGKILL); ``watch`` is called once more after the program ended."""
    start = time.monotonic()
    with open(log, "a", encoding="utf-8", errors="replace") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, text=True, errors="replace")
        copier = threading.Thread(target=_copy, args=(proc, out, echo), daemon=True)
        copier.start()
        received: list[str] = []
        handlers = _pass_on_signals(received)
        early: list[str] = []
        try:
            over = _wait(proc, start, time_s, received, watch, early)
        finally:
            for sig, old in handlers.items():
                signal.signal(sig, old)
        copier.join(timeout=KILL_GRACE_S)
    if watch is not None:
        watch()  # the last values the program wrote
    code = None if over or received or early else proc.returncode
    return Ended(code, time.monotonic() - start, over, received[0] if received else None,
                 early[0] if early and not over and not received else None)


def _copy(proc: subprocess.Popen, out: Any, echo: Callable[[str], None]) -> None:
    for line in proc.stdout:
        out.write(line)
        out.flush()
        echo(line.rstrip("\n"))


def _pass_on_signals(received: list[str]) -> dict[int, Any]:
    """SIGTERM and SIGINT to imf stop the program (a cancel, Ctrl-C); main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    def note(signum: int, _frame: Any) -> None:
        received.append(signal.Signals(signum).name)
    return {sig: signal.signal(sig, note) for sig in (signal.SIGTERM, signal.SIGINT)}


def _wait(proc: subprocess.Popen, start: float, time_s: float | None, received: list[str],
          watch: Watch | None, early: list[str]) -> bool:
    """Wait for the program; True when it ran past its budget (and was stopped); a reason
    ``watch`` gave to stop it goes into ``early``."""
    watched = time.monotonic()
    while proc.poll() is None:
        over = time_s is not None and time.monotonic() - start > time_s
        if watch is not None and time.monotonic() - watched >= WATCH_EVERY_S:
            watched = time.monotonic()
            reason = watch()
            early += [reason] if reason else []
        if over or received or early:
            _stop(proc)
            return over
        time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class MetricRead:
    best: float | None = None  # by the goal (or the last line's, with lines: last)
    last: float | None = None
    count: int = 0  # values seen
    problem: str | None = None  # "no metric", "non-finite metric", "garbage metric": with what was seen
    se: float | None = None  # the standard error the picked value's line gives (metric.se), if any


def read_metric(spec: MetricSpec, source: Path | None, log: Path) -> MetricRead:
    """The metric's values from its source: a JSON file's key, JSON lines, or ``name=value``
    lines of the program's output; NaN or inf is a problem, so is a value that is no number."""
    where = str(source) if source is not None else f"{log.name} ({STDOUT})"
    try:
        raw = _values(spec, source, log)
    except OSError:
        return MetricRead(problem=f"no metric: {where} does not exist")
    if not raw:
        return MetricRead(problem=f"no metric: {spec.name} not found in {where}")
    values = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return MetricRead(problem=f"garbage metric: {spec.name} = {value!r} in {where}, not a number")
        if not math.isfinite(value):
            return MetricRead(count=len(raw), problem=f"non-finite metric: {spec.name} = {value} in {where}")
        values.append(float(value))
    pick = values[-1] if spec.lines == "last" else (max if spec.goal == "maximize" else min)(values)
    return MetricRead(pick, values[-1], len(values), se=_se_of(spec, source, pick) if spec.se else None)


def _se_of(spec: MetricSpec, source: Path, pick: float) -> float | None:
    """The ``metric.se`` key of the (last) JSON line whose metric is ``pick``."""
    found = None
    for line in source.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        value, se = _key(row, spec.name), _key(row, spec.se)
        if value == pick and isinstance(se, (int, float)) and not isinstance(se, bool) and math.isfinite(se):
            found = float(se)
    return found


def _values(spec: MetricSpec, source: Path | None, log: Path) -> list[Any]:
    if source is None:
        pattern = re.compile(rf"(?:^|[\s,;]){re.escape(spec.name)}\s*=\s*(\S+)")
        text = log.read_text(encoding="utf-8", errors="replace")
        return [number_or_text(m.group(1).rstrip(",;")) for m in pattern.finditer(text)]
    text = source.read_text(encoding="utf-8", errors="replace")
    if source.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            return [text.strip()[:40]] if text.strip() else []
        found = _key(data, spec.name)
        return [] if found is _MISSING else [found]
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a truncated last line, a line of something else
        found = _key(row, spec.name)
        if found is not _MISSING:
            rows.append(found)
    return rows


_MISSING = object()


def _key(data: Any, name: str) -> Any:
    return metric_key(data, name, _MISSING)


def tail(path: Path, lines: int = 3, width: int = 300) -> str:
    """The last lines of ``path`` joined on one line (for a one-line message)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())
    return kept[-width:]


def python() -> str:
    return sys.executable
