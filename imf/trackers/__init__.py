"""The training loop's one logger: it fans scalars out to the configured tracker plugins.

``logging.trackers`` names plugins of the ``imf.trackers`` group (swanlab by default; tensorboard
and wandb built in; a third party's the same way; ``none`` or an empty list for none). A plugin
is a class built as ``cls(options)`` (its ``Options`` dataclass, from
``logging.tracker_options.<name>``) with

- ``start(run: TrackerRun) -> str | None``: open the run; the line it returns (where the run is,
  how to sync or view it) is printed once;
- ``log(scalars: dict[str, float], step: int)``: finite scalars at ``global_step``, named as in
  logs.json.txt;
- ``finish()`` (``Tracker``, imf/contracts.py);

and ``requires``, the distributions it needs (``imf plugins`` shows them; a missing one is a
broken plugin and one error line before a trial's folder is made). A tracker never kills
training: a failure is reported once and that tracker is dropped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from imf import registry
from imf.config import Config
from imf.contracts import Tracker  # the group's contract (imf/contracts.py), on this part's face
from imf.errors import ConfigError, PluginError
from imf.registry import as_dict, resolve_options

__all__ = ["GROUP", "RunLogger", "Tracker", "TrackerRun", "check_trackers", "run_group", "tracker_names"]

GROUP = "imf.trackers"


@dataclass(frozen=True)
class TrackerRun:
    """What a tracker is told about the run it logs."""

    config: dict[str, Any]
    trial_id: str
    group: str | None  # the sweep's name for a sweep's trial (logging.group wins)
    run_dir: Path
    project: str
    # the attempt's token (summary.json's run_uid: a resume keeps it, a rerun gets a new one) and
    # whether this start continues it (imf trial --resume): a tracker continues that run
    run_uid: str = ""
    resume: bool = False


def tracker_names(cfg: Config) -> list[str]:
    names = [n for n in cfg.logging.trackers if n]
    return [] if names in ([], ["none"]) else names


def check_trackers(cfg: Config) -> list[tuple[str, Any, Any]]:
    """(name, plugin class, options) of every configured tracker, loaded and checked; a missing
    plugin, its missing package or a bad option is one ConfigError or PluginError. The full
    options (defaults included) are written back into the config."""
    found, filled = [], {}
    unknown = set(cfg.logging.tracker_options) - set(tracker_names(cfg))
    if unknown:
        raise ConfigError(f"config key 'logging.tracker_options': options for {', '.join(sorted(unknown))}, "
                          f"which logging.trackers does not name ({', '.join(tracker_names(cfg)) or 'none'})")
    for name in tracker_names(cfg):
        if "none" == name:
            raise ConfigError("config key 'logging.trackers': 'none' cannot be given with other trackers")
        plugin = registry.get(GROUP, name)
        try:
            registry.requirements(plugin)
        except PluginError as exc:  # "needs tensorboard, which is not installed (pip install ...)"
            raise PluginError(f"config key 'logging.trackers': tracker '{name}' {exc}") from None
        where = f"logging.tracker_options.{name}"
        given = cfg.logging.tracker_options.get(name)
        if given is not None and not isinstance(given, dict):
            raise ConfigError(f"config key '{where}': expected a mapping of option names to values, got {given!r}")
        options = resolve_options(plugin, cfg.logging.tracker_options.get(name), where, f"tracker '{name}'")
        filled[name] = as_dict(options)
        found.append((name, plugin, options))
    cfg.logging.tracker_options = {k: v for k, v in filled.items() if v}
    return found


class RunLogger:
    """The loop's logger over the configured trackers: ``start``, ``log`` every epoch,
    ``finish``; never raises."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._live: dict[str, Any] = {}
        self._dropped: set[str] = set()

    def start(self, cfg: Config, trial_id: str, run_dir: Path, group: str | None = None,
              run_uid: str = "", resume: bool = False) -> None:
        run = TrackerRun(cfg.to_dict(), trial_id, group, Path(run_dir), cfg.logging.project, run_uid, resume)
        for name, plugin, options in check_trackers(cfg):
            try:
                tracker = plugin(options) if options is not None else plugin()
                line = tracker.start(run)
            except Exception as exc:  # noqa: BLE001 - any tracker failure is non-fatal
                self._fail(name, "start", exc)
                continue
            self._live[name] = tracker
            if line:
                self._say(line)

    def log(self, scalars: dict[str, Any], step: int) -> None:
        if not self._live:
            return
        clean: dict[str, float] = {}
        for key, value in scalars.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            if math.isfinite(value):
                clean[key] = float(value)
            elif key not in self._dropped:
                self._dropped.add(key)
                self._say(f"trackers: {key} = {value} at step {step} not logged (non-finite values "
                          "are left out; logs.json.txt has null)")
        for name, tracker in list(self._live.items()):
            try:
                tracker.log(clean, step)
            except Exception as exc:  # noqa: BLE001
                self._fail(name, "log", exc)

    def finish(self) -> None:
        for name, tracker in list(self._live.items()):
            try:
                tracker.finish()
            except Exception as exc:  # noqa: BLE001
                self._fail(name, "finish", exc)
        self._live.clear()

    def _fail(self, name: str, what: str, exc: Exception) -> None:
        self._say(f"{name}: {what} failed ({type(exc).__name__}: {exc}); continuing without it")
        self._live.pop(name, None)


def run_group(cfg: Config, overrides: list[str]) -> str | None:
    """The trackers' group: ``logging.group`` when set; else the sweep's name for a trial a sweep
    started (it passes ``sweep.name=...``); a standalone trial belongs to no group."""
    if cfg.logging.group:
        return cfg.logging.group
    return cfg.sweep.name if any(o.startswith("sweep.name=") for o in overrides) else None
