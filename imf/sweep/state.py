"""What sweep.json holds: the plan and the state of every trial, queue and halving decision.

Data only: imf/sweep/folder.py reads and writes it (checked by imf/sweep/validate.py), the
engine changes it, imf/sweep/halving.py holds the halving rule.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from imf.errors import SweepError
from imf.scheduler import Handle
from imf.clock import now_iso
from imf.upgrade import FileKind, Step

FINAL = ("completed", "stopped_early", "diverged", "failed", "stalled")
ACTIVE = ("starting", "queued", "running")  # queued: waiting in a batch system (Slurm)
STATES = ("pending", *ACTIVE, *FINAL)  # every state a trial can be in
QUEUE_STATES = ("live", "down", "blocked")  # blocked: a full disk
SWEEP_STATUSES = ("planned", "running", "interrupted", "finished", "stopped")



def _stale_pids_named(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 could hold attempts started before attempt tokens: their pid files did not say
    whose they were, so a trial still starting could find its previous attempt's pid there. That
    pid is named (``stale_pid``): a poll that finds it found no start of this attempt."""
    for trial in data.get("trials") or []:
        if not isinstance(trial, dict) or trial.get("state") != "starting":
            continue
        history = trial.get("history") or []
        previous = history[-1].get("pid") if history and isinstance(history[-1], dict) else None
        if not (trial.get("handle") or {}).get("token") and previous is not None:
            trial["stale_pid"] = previous
    return data


KIND = FileKind("sweep.json", (Step(2, "a trial starting before attempt tokens names its previous attempt's pid "
                                       "(stale_pid)", _stale_pids_named),))
VERSION = KIND.current

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
    "rerun": (("failed", "diverged", "stalled"), "pending"),  # imf sweep --rerun (imf/sweep/rerun.py)
    "preempted": (("running",), "queued"),  # its batch system requeued it: its next run resumes it
}
# a start that never happened is no attempt; a requeued job's next run is one
ATTEMPTS_BY = {"launch": 1, "not started": -1, "preempted": 1}


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
    state: str = "pending"  # one of STATES; changed only by ``move``
    attempts: int = 0  # launches so far (counted by ``move``)
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
    restarts_seen: int = 0  # the batch system's requeues of its job already counted as attempts
    started_unix: float | None = None
    elapsed_s: float | None = None
    recorded: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)  # one entry per ended attempt
    orphans: list[Orphan] = field(default_factory=list)  # jobs left on down hosts
    # imf sweep --rerun: one entry per rerun (requested, was, after_attempt, history: the length
    # of ``history`` then; the retries count the failures after it)
    reruns: list[dict[str, Any]] = field(default_factory=list)
    config: str | None = None  # its own config file, when not the sweep's (the loop's proposals)
    init_from: str | None = None  # the checkpoint it warm-starts from (imf trial --init-from)
    # a pid its folder may show that is not its starting attempt's (set by sweep.json's version-2
    # step for attempts from before attempt tokens); cleared once the attempt is re-attached
    stale_pid: int | None = None

    def move(self, event: str, final: str | None = None) -> None:
        """Change the state by ``event`` of TRANSITIONS (``final``: the state an "ended" leads to)."""
        allowed, to = TRANSITIONS[event]
        to = to or final
        if self.state not in allowed or to is None or (final and to not in FINAL):
            raise SweepError(f"internal error: trial {self.id} cannot go from {self.state} by "
                             f"'{event}'{f' to {final}' if final else ''}")
        self.state = to
        self.attempts += ATTEMPTS_BY.get(event, 0)

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

    def since_rerun(self) -> list[dict[str, Any]]:
        """The ended attempts since the last ``imf sweep --rerun`` (all of them without one)."""
        return self.history[self.reruns[-1]["history"]:] if self.reruns else self.history

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


# ---------------------------------------------------------------------- halving (imf/sweep/halving.py: the rule)
@dataclass
class RungScore:
    trial: str
    rung: int  # the epoch, counted from 1
    score: float
    se: float | None  # None: fewer than two per-episode scores, the noise is unknown
    episodes: int


@dataclass
class Decision:
    trial: str
    rung: int
    outcome: str  # "kept" or "stopped"
    reason: str
    cut: float | None = None  # the rung's cut when it was decided
    compared: int = 0  # trials with a score at the rung when it was decided
    when: str = field(default_factory=now_iso)


@dataclass
class HalvingState:
    eta: int
    rungs: list[int]
    scores: list[RungScore] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HalvingState":
        """sweep.json's ``halving``, once imf/sweep/validate.py has checked it."""
        return cls(data["eta"], list(data["rungs"]), [RungScore(**s) for s in data.get("scores", [])],
                   [Decision(**d) for d in data.get("decisions", [])])

    def score_of(self, trial: str, rung: int) -> RungScore | None:
        return next((s for s in self.scores if s.trial == trial and s.rung == rung), None)

    def decision_of(self, trial: str, rung: int) -> Decision | None:
        return next((d for d in self.decisions if d.trial == trial and d.rung == rung), None)

    def stop_of(self, trial: str) -> Decision | None:
        """The decision that stopped ``trial``, if one did."""
        return next((d for d in self.decisions if d.trial == trial and d.outcome == "stopped"), None)


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
    hypothesis: str | None = None  # the iteration log's block its trials test (a loop round's H<n>)
    min_queues: int | None = None  # queues that must pass their check to start (None: every one)
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

    def trial(self, tid: str) -> TrialState:
        return next(t for t in self.trials if t.id == tid)

    def queue(self, name: str) -> QueueState:
        return next(q for q in self.queues if q.name == name)

    def pending_on(self, queue: str) -> list[TrialState]:
        pending = [t for t in self.trials if t.queue == queue and t.state == "pending"]
        return sorted(pending, key=lambda t: t.order)

    def live_queues(self) -> list[QueueState]:
        return [q for q in self.queues if q.state == "live"]
