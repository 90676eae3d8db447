"""sweep.json (the plan and the state of every trial) and sweep.log (one line per event).

sweep.json is rewritten atomically (temporary file in the same folder, fsync, rename), so a
controller killed at any moment leaves a readable state that ``--resume`` continues from.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_json
from imf.errors import SweepError
from imf.scheduler.base import Handle
from imf.store.base import now_iso
from imf.sweep.halving import HalvingState

VERSION = 1
FINAL = ("completed", "stopped_early", "diverged", "failed", "stalled")
ACTIVE = ("starting", "queued", "running")  # queued: waiting in a batch system (Slurm)

# A trial's life as events: the states each may happen in, and the state it leads to (None:
# the final state the engine names). Every change of a trial's state goes through
# ``TrialState.move``, so this table is the whole state machine.
TRANSITIONS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "launch": (("pending",), "starting"),  # marked before its process starts
    "not started": (("starting",), "pending"),  # the start failed, or never happened
    "started": (ACTIVE, "running"),  # started, out of a batch queue, or re-attached
    "waiting": (ACTIVE, "queued"),  # waits in a batch system's queue
    "retry": (ACTIVE, "pending"),  # the attempt failed, stalled or timed out; retries are left
    "ended": (ACTIVE, None),  # to one of FINAL
    "requeued": (("pending", *ACTIVE), "pending"),  # its queue went down or blocked, or cancelled
    "orphan result": (("pending",), "running"),  # takes the result of its job on a lost host
}


@dataclass
class Orphan:
    """A job of a trial left on a queue that went down (it may still run there)."""
    queue: str
    handle: Handle
    attempt: int = 0
    since: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "attempt": self.attempt, "handle": self.handle.to_dict(),
                "since": self.since}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Orphan":
        return cls(data["queue"], Handle.from_dict(data["handle"]), int(data.get("attempt") or 0),
                   str(data.get("since") or ""))


@dataclass
class TrialState:
    id: str
    overrides: list[str]
    seed: int
    epochs: int
    params: dict[str, Any]
    cost: float
    queue: str
    order: int = 0  # position on its queue; the lowest pending one starts next
    state: str = "pending"  # pending, or one of ACTIVE or FINAL; changed only by ``move``
    attempts: int = 0  # launches so far
    handle: Handle | None = None
    started: str | None = None
    finished: str | None = None
    exit_code: int | None = None
    reason: str = ""
    epoch: int = 0
    last_score: float | None = None
    best_score: float | None = None
    best_success: float | None = None  # success rate of the rollout with the best score
    val_mse: float | None = None  # the last epoch's; the validation number people read
    log_offset: int = 0
    started_unix: float | None = None
    elapsed_s: float | None = None
    recorded: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)  # one entry per ended attempt
    orphans: list[Orphan] = field(default_factory=list)  # jobs left on down hosts
    config: str | None = None  # its own config file, when not the sweep's (the loop's proposals)
    init_from: str | None = None  # the checkpoint it warm-starts from (imf trial --init-from)

    def move(self, event: str, final: str | None = None) -> None:
        """Change the state by ``event`` of TRANSITIONS (``final``: the state an "ended" leads to)."""
        allowed, to = TRANSITIONS[event]
        to = to or final
        if self.state not in allowed or to is None or (final and to not in FINAL):
            raise SweepError(f"internal error: trial {self.id} cannot go from {self.state} by "
                             f"'{event}'{f' to {final}' if final else ''}")
        self.state = to

    def note_attempt(self, outcome: str, reason: str, exit_code: int | None = None,
                     attempt: int | None = None, queue: str | None = None,
                     handle: Handle | None = None) -> None:
        """Add an ended attempt to ``history`` (by default the current one, on its queue, with
        its handle's pid): the one place a history entry is made."""
        handle = self.handle if handle is None else handle
        entry = {"attempt": self.attempts if attempt is None else attempt,
                 "queue": self.queue if queue is None else queue,
                 "pid": handle.pid if handle else None}
        if attempt is None and self.started is not None:
            entry["started"] = self.started
        entry.update(finished=now_iso(), exit_code=exit_code, outcome=outcome, reason=reason)
        self.history.append(entry)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}
        data["handle"] = self.handle.to_dict() if self.handle else None
        data["orphans"] = [o.to_dict() for o in self.orphans]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrialState":
        data = dict(data)
        data["handle"] = Handle.from_dict(data["handle"]) if data.get("handle") else None
        data["orphans"] = [Orphan.from_dict(o) for o in data.get("orphans", [])]
        return cls(**data)


@dataclass
class QueueState:
    name: str  # unique in the sweep ("local:cpu", "local:cpu#2", ...)
    spec: str
    speed: float = 1.0
    options: dict[str, Any] = field(default_factory=dict)
    state: str = "live"  # live, down (unreachable, or its GPU missing) or blocked (its disk is full)
    reason: str = ""
    gpu: dict[str, Any] | None = None  # its GPU at the last probe: index, name, free_mib, total_mib


@dataclass
class SweepState:
    name: str
    config: str  # preset name, or the path of the sweep's resolved config file
    trial_command: list[str]
    overrides: list[str] = field(default_factory=list)
    grid: list[str] = field(default_factory=list)
    retries: int = 1
    stall_timeout: float = 1800.0
    poll: float = 5.0
    notify: str | None = None
    stores: list[str] = field(default_factory=list)
    final_eval: int | None = None  # imf trial --final-eval N for every trial
    halving: HalvingState | None = None  # --halving ETA --rungs ...: the rule and its decisions
    queues: list[QueueState] = field(default_factory=list)
    trials: list[TrialState] = field(default_factory=list)
    status: str = "planned"  # planned, running, interrupted, finished, stopped
    created: str = field(default_factory=now_iso)
    controller: dict[str, Any] = field(default_factory=dict)
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in ("queues", "trials", "halving")}
        data["halving"] = dataclasses.asdict(self.halving) if self.halving else None
        data["queues"] = [dataclasses.asdict(q) for q in self.queues]
        data["trials"] = [t.to_dict() for t in self.trials]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SweepState":
        data = dict(data)
        data["queues"] = [QueueState(**q) for q in data.get("queues", [])]
        data["trials"] = [TrialState.from_dict(t) for t in data.get("trials", [])]
        if data.get("halving") is not None:
            data["halving"] = HalvingState.from_dict(data["halving"])
        return cls(**data)

    def config_text(self, config: str | None = None) -> str | None:
        """The text of the config file ``config`` (default: the sweep's); None for a preset name."""
        config = config or self.config
        if Path(config).suffix not in (".yaml", ".yml"):
            return None
        try:
            return Path(config).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SweepError(f"cannot read the sweep's config {config} ({exc})") from None

    def trial(self, tid: str) -> TrialState:
        return next(t for t in self.trials if t.id == tid)

    def queue(self, name: str) -> QueueState:
        return next(q for q in self.queues if q.name == name)

    def pending_on(self, queue: str) -> list[TrialState]:
        pending = [t for t in self.trials if t.queue == queue and t.state == "pending"]
        return sorted(pending, key=lambda t: t.order)

    def live_queues(self) -> list[QueueState]:
        return [q for q in self.queues if q.state == "live"]


class SweepDir:
    """A sweep's folder: its state file, its master log, one folder per trial."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def state_file(self) -> Path:
        return self.path / "sweep.json"

    def trial_dir(self, tid: str) -> Path:
        return (self.path / tid).resolve()

    def exists(self) -> bool:
        return self.state_file.exists()

    def load(self) -> SweepState:
        """The state in sweep.json, checked field by field (SweepError naming the field)."""
        from imf.sweep.validate import check_sweep_dict

        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SweepError(f"{self.path}: no sweep.json here (is it a sweep folder?)") from None
        except (OSError, ValueError) as exc:  # ValueError: JSON, UTF-8
            raise SweepError(f"{self.state_file}: unreadable sweep state ({exc})") from None
        version = data.get("version") if isinstance(data, dict) else None
        if isinstance(data, dict) and version != VERSION:
            raise SweepError(f"{self.state_file}: state version {version}, this imf reads {VERSION}")
        try:
            check_sweep_dict(data, SweepState, QueueState, TrialState)
        except SweepError as exc:
            raise SweepError(f"{self.state_file}: {exc}") from None
        return SweepState.from_dict(data)

    def save(self, state: SweepState) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.state_file, state.to_dict())

    def log(self, message: str) -> str:
        return self.log_lines([message])[0]

    def log_lines(self, messages: list[str]) -> list[str]:
        """Append ``messages`` to sweep.log in one write (a plan of 10,000 trials is as many lines)."""
        stamp = now_iso()
        lines = [f"{stamp} {message}" for message in messages]
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / "sweep.log", "a") as f:
            f.write("".join(line + "\n" for line in lines))
        return lines
