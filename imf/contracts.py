"""Every plugin group's contract, in one place and one style: a ``typing.Protocol`` per group.

    group           contract      built as                what the callers use
    imf.curricula   Curriculum    cls(options)            check, pool
    imf.masks       Mask          a function              (n_action, n_time, n_obs) -> masks
    imf.objectives  Objective     cls(cfg, options)       name, uses_v_head, loss, sample
    imf.schedulers  Scheduler     cls.from_spec(spec,     start, poll, stop, fetch, ... (below)
                                      options)
    imf.stores      Store         cls(root)               record, read
    imf.trackers    Tracker       cls()                   start, log, finish
    imf.trainers    Trainer       cls()                   check, run

``imf plugins --check`` (imf/registry/contracts.py) holds every installed plugin to its group's
Protocol here: the members it must have, each callable with the positional parameters the
Protocol names, and the attributes annotated without a value. A plugin that declares
``Options`` (imf/registry/options.py) also takes them as the last argument of its constructor
(of the call, for a mask) where the contract does not pass them always. A plugin may also
have ``check_config(section)`` (a classmethod, on a class), called with its config section
(``cfg.objective`` for an objective) when its options are checked, before any run folder is
made: it raises ``imf.errors.ConfigError`` for a core key of that section it cannot honour.

A plugin need not extend anything: it keeps its contract by its shape. Three groups offer a
helper base with shared code that keeps the Protocol: ``imf.scheduler.Scheduler`` (the job
wrapper's plumbing, ``poll_many``, defaults), ``imf.curricula.Curriculum`` (an empty ``check``)
and ``imf.train.trainers.Trainer``. ``imf.attention.Mask``, ``imf.objectives.base.Objective``,
``imf.store.Store`` and ``imf.trackers.Tracker`` are these Protocols, re-exported.

This module is a leaf (tests/test_import_rules.py, LEAVES): any part may import it and it
imports no part of imf, not even for type hints (shared/spec/ARCHITECTURE.md: no import
circles, not even for type hints; the scheduler part, say, imports this module for its base
class, so this module cannot import the scheduler's types back). The parts' own types that the
signatures name (``JobRequest``, ``TrackerRun``, ...) are therefore ``Any`` aliases here, each
named after the type it stands for and the module that defines it; third-party types (numpy,
torch) are imported for type checkers only, so importing this module costs no torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = ["CONTRACTS", "Curriculum", "Mask", "Objective", "Scheduler", "Store", "Tracker", "Trainer"]

# The parts' types the signatures name: Any here (see above); the comment says what each is.
_AttentionMasks = Any  # imf.attention.AttentionMasks: (self_attn, cross_attn) boolean arrays or None
_ObjectiveConfig = Any  # imf.config.ObjectiveConfig: the config's objective section
_Model = Any  # a noise-prediction network, model(z, t, h, cond), with horizon and action_dim
_Metrics = Any  # imf.objectives.base.Metrics: name -> 0-dim tensor or float
_TrainEpisodes = Any  # imf.curricula.TrainEpisodes: the training episodes and what is known of each
_JobRequest = Any  # imf.scheduler.JobRequest: what a scheduler is asked to start
_Handle = Any  # imf.scheduler.Handle: how a scheduler finds a job it started again
_JobStatus = Any  # imf.scheduler.JobStatus: a job's state and progress
_TrackerRun = Any  # imf.trackers.TrackerRun: the run a tracker logs
_TrialRequest = Any  # imf.train.trainers.TrialRequest: imf trial's command line, parsed


@runtime_checkable
class Curriculum(Protocol):
    """``imf.curricula``: which training episodes each epoch draws its windows from."""

    def __init__(self, options: Any) -> None: ...

    def check(self, episodes: _TrainEpisodes) -> None:
        """Raise ``imf.errors.DataError`` (one line) when the data lacks what this orders by."""
        ...

    def pool(self, episodes: _TrainEpisodes, epoch: int, progress: float) -> np.ndarray:
        """The buffer indices of the episodes epoch ``epoch`` samples from; ``progress`` is the
        share of training done when it starts, in [0, 1]."""
        ...


@runtime_checkable
class Mask(Protocol):
    """``imf.masks``: a function of the numbers of action, time and observation tokens that
    returns the self- and cross-attention masks (True: may attend; None: no mask)."""

    def __call__(self, n_action: int, n_time: int, n_obs: int) -> _AttentionMasks: ...


@runtime_checkable
class Objective(Protocol):
    """``imf.objectives``: the training loss of a batch, and the sampling of an action chunk."""

    name: str
    uses_v_head: bool

    def __init__(self, cfg: _ObjectiveConfig, options: Any = None) -> None: ...

    def loss(self, model: _Model, actions: torch.Tensor, cond: torch.Tensor,
             generator: torch.Generator | None = None) -> tuple[torch.Tensor, _Metrics]:
        """(loss, metrics) of a batch: actions (B,H,A) normalised, cond (B,n_obs,F)."""
        ...

    def sample(self, model: _Model, cond: torch.Tensor, n_steps: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """An action chunk (B,H,A), normalised, in ``n_steps`` steps (None: the objective's own)."""
        ...


@runtime_checkable
class Scheduler(Protocol):
    """``imf.schedulers``: runs the job wrapper for one trial on one queue slot, reports its
    state, stops it; declares its own spec and hosts-file keys. docs/INTERFACES.md,
    "Schedulers", says what each member does; ``imf.scheduler.Scheduler`` implements the
    optional ones."""

    query_keys: tuple[str, ...]  # options a spec may carry after "?" besides speed
    option_keys: tuple[str, ...]  # the hosts-file keys it reads
    handle_keys: dict[str, type]  # keys it adds to a handle's extra, with their JSON types
    resumes_lost_jobs: bool  # a lost job's retry resumes the trial from latest.pt

    def __init__(self, spec: str, options: dict[str, Any] | None = None) -> None: ...

    @classmethod
    def from_spec(cls, spec: str, options: dict[str, Any] | None = None) -> Scheduler: ...

    @classmethod
    def slots(cls, spec: str, options: dict[str, Any] | None = None) -> int: ...

    @property
    def python(self) -> str: ...

    @property
    def gpu(self) -> str | None: ...

    def preflight(self) -> None: ...

    def check(self) -> None: ...

    def check_plugins(self, wanted: list[str]) -> None: ...

    def probe_key(self) -> Any: ...

    def host_label(self) -> str: ...

    def probe_gpus(self) -> dict[str, Any]: ...

    def job_dir(self, job: _JobRequest) -> str: ...

    def start(self, job: _JobRequest) -> _Handle: ...

    def poll(self, handle: _Handle, offset: int = 0) -> _JobStatus: ...

    def batch_key(self) -> Any: ...

    def poll_many(self, jobs: list[tuple[_Handle, int]]) -> list[Any]:
        """``poll`` of each (handle, offset): a JobStatus, or the QueueError of a slot not reached."""
        ...

    def stop(self, handle: _Handle) -> None: ...

    def revoke(self, handle: _Handle) -> bool: ...

    def fetch(self, handle: _Handle) -> None: ...

    def describe(self, job: _JobRequest) -> str: ...

    def close(self) -> None: ...


@runtime_checkable
class Store(Protocol):
    """``imf.stores``: records finished trials (an upsert by attempt) and reads them back."""

    def __init__(self, root: Any) -> None: ...

    def record(self, record: dict[str, Any]) -> None:
        """Upsert ``record`` by its attempt (its ``id`` and ``run_uid``)."""
        ...

    def read(self) -> list[dict[str, Any]]:
        """Every trial recorded so far, in the order first recorded."""
        ...


@runtime_checkable
class Tracker(Protocol):
    """``imf.trackers``: built as ``cls()`` (``cls(options)`` with ``Options``); never fatal."""

    def __init__(self) -> None: ...

    def start(self, run: _TrackerRun) -> str | None:
        """Open the run; the line returned (where it is, how to view it) is printed once."""
        ...

    def log(self, scalars: dict[str, float], step: int) -> None: ...

    def finish(self) -> None: ...


@runtime_checkable
class Trainer(Protocol):
    """``imf.trainers``: runs one trial of a config; built as ``cls()``."""

    def __init__(self) -> None: ...

    def check(self, request: _TrialRequest) -> None:
        """Refuse a request this trainer cannot run (a ConfigError naming the field), before
        anything is written."""
        ...

    def run(self, request: _TrialRequest) -> int:
        """Run one trial as ``request`` says; return its exit code (imf/errors.py's table)."""
        ...


CONTRACTS: dict[str, type] = {
    "imf.curricula": Curriculum,
    "imf.masks": Mask,
    "imf.objectives": Objective,
    "imf.schedulers": Scheduler,
    "imf.stores": Store,
    "imf.trackers": Tracker,
    "imf.trainers": Trainer,
}
