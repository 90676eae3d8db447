"""What a report holds: trials, cells (trials that differ only in seed), trends, curves."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from imf.clock import now_iso

METRIC = "test_mean_score"
LAST_K = 3  # rollouts averaged by the "last K" score


@dataclass
class TrialRow:
    id: str
    run_dir: str | None
    source: str  # "imf", "diffusion_policy", "scoreboard" (a record without its folder), "ensemble"
    status: str
    n_emb: int | None = None
    n_layer: int | None = None
    final_epoch: int | None = None
    best_score: float | None = None  # max test_mean_score over the rollouts: the headline
    best_epoch: int | None = None
    success_rate: float | None = None  # at the epoch of the best score
    queue: str | None = None
    note: str = ""
    rank: int | None = None
    score: float | None = None  # what ranks it and what its cell averages: max, last-k or selection
    score_se: float | None = None  # (Report.ranked_by says which)
    best_se: float | None = None  # standard error of the best rollout, from its episodes
    episodes: int | None = None  # episodes in the best rollout
    rollouts: int = 0
    last_k: float | None = None  # mean of the last K rollouts
    last_k_se: float | None = None
    last_k_n: int = 0  # rollouts in that mean (fewer than K when the run had fewer)
    selection: float | None = None  # the final checkpoint re-scored on selection seeds (final_eval.json)
    selection_se: float | None = None
    selection_episodes: int | None = None
    selection_success: float | None = None  # success rate on the selection seeds
    holdout: float | None = None  # the latest look at the holdout seeds (holdout.json)
    holdout_se: float | None = None
    holdout_success: float | None = None
    holdout_episodes: int | None = None
    holdout_looks: int = 0  # every look at this run's holdout that could be a claim (not at a snapshot)
    holdout_curve_looks: int = 0  # looks at kept snapshots: points of a curve against samples
    holdout_checkpoints: int = 0  # distinct checkpoints looked at
    seed: int | None = None
    cell: str | None = None  # the cell: this trial's config without training.seed
    tied: bool | None = None  # tied within noise with rank 1; None: noise unknown
    vs_selection: str | None = None  # an ensemble against the best trial on the same selection seeds
    restarts: int = 0  # times the log restarted (global_step went back)
    budget_kind: str | None = None  # "time" (training.time_budget_s) or "epochs"
    budget_value: float | None = None  # seconds or epochs
    budget_clock: str | None = None  # wall or cpu, for a time budget
    steps: int | None = None  # optimizer steps reached (the last logged global_step)
    samples: int | None = None  # training samples reached: steps x batch size
    train_s: float | None = None  # training seconds reached (rollouts excluded)
    members: list[str] = field(default_factory=list)  # an ensemble's members, trial@epoch
    reason: str = ""  # why it failed (summary.json), e.g. out of GPU memory and what to run instead
    attempts: int = 0  # launches of the trial in its sweep (sweep.json), retries and reruns included
    attempt_log: str = ""  # each ended attempt's outcome, and the reruns (imf/report/attempts.py)
    metric: str | None = None  # a trainer's metric as scored, "-val_mse" for goal minimize (docs/trainers.md)

    @property
    def is_ensemble(self) -> bool:
        """An ``imf ensemble`` result: ranked beside the trials, never counted as one."""
        return self.source == "ensemble"


@dataclass
class Curve:
    id: str
    cell: str | None
    rollouts: list[list[float | None]] = field(default_factory=list)  # [epoch, score, se]
    val_loss: list[list[float]] = field(default_factory=list)  # [epoch, loss]
    progress: list[list[float]] = field(default_factory=list)  # [epoch, steps, samples, minutes] per logged epoch
    train_loss: list[list[float]] = field(default_factory=list)  # [epoch, mean loss of its steps]
    train_mse: list[list[float]] = field(default_factory=list)  # [epoch, mse]: imf's loss is about 1
    val_mse: list[list[float]] = field(default_factory=list)  # whatever the model does (docs/policy.md)


@dataclass
class Cell:
    label: str
    n_emb: int | None
    n_layer: int | None
    params: dict[str, Any]  # other config values that vary between the cells
    trials: list[str]
    seeds: list[int | None]  # of its trials, in the order of ``trials``
    n: int = 0  # scored seeds: trials of one seed (the same run again) count once
    duplicates: list[str] = field(default_factory=list)  # trials of a seed another trial of the cell has
    unscored: int = 0  # trials without a score yet
    mean: float | None = None  # of the trials' scores (max, last-k or selection: the report's ranked_by)
    sd: float | None = None  # over seeds (None for one trial)
    se: float | None = None  # of the mean; see noise
    noise: str = "unknown"  # "seeds": sd / sqrt(n); "episodes": one trial's rollout SE
    low: float | None = None
    high: float | None = None
    last_k: float | None = None  # mean over the trials
    selection: float | None = None  # mean over the trials scored on selection seeds
    selection_se: float | None = None
    selection_n: int = 0
    success: float | None = None  # mean over the trials of the best rollout's success rate
    selection_success: float | None = None  # mean over the trials scored on selection seeds


@dataclass
class Group:
    value: int | float  # the n_emb, n_layer or other setting's value of this group
    trials: int
    mean: float  # mean of its cells' means
    best: float
    best_trial: str
    cells: int = 0
    se: float | None = None  # from the cells' SEs; None when one of them is unknown
    best_se: float | None = None  # of the best trial's best rollout
    steps: float | None = None  # mean optimizer steps of its trials
    samples: float | None = None


@dataclass
class AxisTrend:
    """The mean score along one other setting that varies between cells (data.demo_episodes)."""
    key: str  # the config key
    groups: list[Group] = field(default_factory=list)  # by its value, smallest first
    effect: dict[str, Any] | None = None  # smallest to largest value: delta, se, clear, low, high, text


@dataclass
class Trends:
    by_n_emb: list[Group] = field(default_factory=list)
    by_n_layer: list[Group] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    best_cell: dict[str, Any] | None = None  # label, n_emb, n_layer, mean, se, n, tied_with
    width: dict[str, Any] | None = None  # delta, se, clear, low, high, text
    depth: dict[str, Any] | None = None
    selection: str | None = None  # how the max and selection-seed rankings relate, in words
    holdout: str | None = None  # how many runs and checkpoints were looked at on the holdout
    basis: dict[str, str] | None = None  # kind, text: what the comparison was equal in
    axes: list[AxisTrend] = field(default_factory=list)  # every other numeric setting that varies


@dataclass
class Report:
    trials: list[TrialRow]
    trends: Trends
    sources: list[str]
    notices: list[str] = field(default_factory=list)
    metric: str = METRIC
    last_k: int = LAST_K
    curves: list[Curve] = field(default_factory=list)
    x_axis: str = "epoch"  # of curves.png: epoch, steps, samples or minutes
    config: dict[str, Any] = field(default_factory=dict)  # settings shared by every cell
    ranked_by: dict[str, str] = field(default_factory=dict)  # by, text, name: imf.report.basis.Ranking
    created: str = field(default_factory=now_iso)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
