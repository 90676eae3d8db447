"""The ``imf.trainers`` plugin group's helper base, and what ``imf trial`` hands a trainer.

A config's ``trainer:`` key names the plugin (imf's own ``imf`` without the key). ``imf trial``
builds a ``TrialRequest`` from its command line, looks the trainer up through the registry and
calls ``check`` (everything refused before a run folder exists) and ``run`` (one trial; its
return value is the process's exit code, imf/errors.py's OUTCOME_EXIT). The sweep launches
``imf trial`` as a process, so every trainer serves sweeps, loops and the stores alike.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrialRequest:
    """``imf trial``'s command line, parsed: what a trainer is asked to run."""

    config: str  # a preset name or a YAML path
    dotted: list[str] = field(default_factory=list)  # key=value words
    trial_id: str | None = None
    out: Path | None = None
    seed: int | None = None
    epochs: int | None = None
    init_from: Path | None = None
    patience: int | None = None
    note: str = ""
    overrides: str | None = None  # JSON, deep-merged
    device: str | None = None
    stores: list[str] | None = None
    resume: bool = False
    final_eval: int | None = None
    holdout: bool = False
    hypothesis: str | None = None
    dry_run: bool = False
    time_steps: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Trainer(ABC):
    """The helper base of ``imf.trainers`` plugins, built as ``cls()``: it keeps the group's
    contract (``imf.contracts.Trainer``); a plugin may extend it, or only match the contract."""

    @abstractmethod
    def check(self, request: TrialRequest) -> None:
        """Refuse a request this trainer cannot run (a ConfigError naming the field), before
        anything is written."""

    @abstractmethod
    def run(self, request: TrialRequest) -> int:
        """Run one trial as ``request`` says; return its exit code (imf/errors.py's table)."""
