"""The data rules of ``imf suggest``: more data for a best run that overfits (a warm start of its
best.pt on twice the training episodes, continued while each doubling gains beyond noise), and
a curriculum for a best cell whose runs diverged or stalled early.

A run's data is what its summary.json recorded (``data``: the data set's episodes, its
validation split, the training episodes it drew from), so a data set is never opened here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from imf.config import Config, load_config
from imf.errors import ConfigError
from imf.report import Cell, TrialRow
from imf.stats import clear_difference, difference_se, pm, signed
from imf.store import CONFIG, RunLayout, read_summary
from imf.suggest.rules import Context, base_run, best_run, propose, shown_path
from imf.suggest.signals import overfitting, stalled
from imf.suggest.tried import settings_of

CURRICULUM = "easy_first"
CURRICULUM_KEY = "data.curriculum"  # its options are data.curriculum_options.<field>
DOUBLED_SUFFIX = re.compile(r"-(demos|episodes)\d+$")


@dataclass(frozen=True)
class DataSize:
    episodes: int  # in the data set (the scripted demos made, or the user's replay buffer)
    val_episodes: int  # its validation split
    train_episodes: int  # what the run trained on
    demos: bool  # scripted demos (data.path unset)
    cap: int | None  # data.max_train_episodes
    path: str | None

    @property
    def split(self) -> int:
        """The training episodes the data set holds."""
        return self.episodes - self.val_episodes

    def words(self) -> str:
        return (f"{self.episodes} demonstrations" if self.demos and self.train_episodes == self.split
                else f"{self.train_episodes} training episodes")


def data_size(run_dir: Path) -> DataSize | str:
    """The run's data, or why it is not known."""
    summary = read_summary(run_dir)
    counts = (summary.data if summary else None) or {}
    if not all(isinstance(counts.get(k), int) for k in ("episodes", "val_episodes", "train_episodes")):
        return "its summary.json does not record its data (a run of an older imf)"
    try:
        cfg: Config = load_config(str(run_dir / CONFIG))
    except ConfigError as exc:
        return f"its config does not load ({exc})"
    return DataSize(counts["episodes"], counts["val_episodes"], counts["train_episodes"],
                    not cfg.data.path, cfg.data.max_train_episodes, cfg.data.path)


def doubled(size: DataSize) -> tuple[dict[str, int], str] | str:
    """The overrides that train on twice the episodes and their words; or, when the user's data
    set has no more training episodes, why not."""
    target = 2 * size.train_episodes
    if size.split >= target:
        return ({"data.max_train_episodes": target},
                f"{target} of its data set's {size.split} training episodes (2 x {size.train_episodes})")
    if not size.demos:
        if size.split > size.train_episodes:
            return ({"data.max_train_episodes": size.split},
                    f"all {size.split} training episodes of {size.path} (fewer than 2 x {size.train_episodes})")
        return f"{size.path} has no training episodes beyond the {size.train_episodes} it used"
    changes = {"data.demo_episodes": 2 * size.episodes}
    if size.cap is not None:  # else the cap would leave the new demonstrations out
        changes["data.max_train_episodes"] = target
    return changes, f"{2 * size.episodes} demonstrations (2 x {size.episodes})"


def _doubled_id(tid: str, changes: dict[str, int]) -> str:
    base = DOUBLED_SUFFIX.sub("", tid.rsplit("/", 1)[-1])
    if "data.demo_episodes" in changes:
        return f"{base}-demos{changes['data.demo_episodes']}"
    return f"{base}-episodes{changes['data.max_train_episodes']}"


# the doubling chain ----------------------------------------------------------
def _row_of_checkpoint(ctx: Context, checkpoint: Path | None) -> TrialRow | None:
    if checkpoint is None:
        return None
    owner = checkpoint.parent.parent  # <run>/checkpoints/<file>
    return next((t for t in ctx.report.trials if t.run_dir and Path(t.run_dir).resolve() == owner), None)


def _init_of(ctx: Context, row: TrialRow) -> Path | None:
    return next((r.init_from for r in ctx.tried.runs if r.id == row.id), None)


def _on_more_data(child: TrialRow, parent: TrialRow) -> bool:
    sizes = data_size(Path(child.run_dir)), data_size(Path(parent.run_dir))
    return all(isinstance(s, DataSize) for s in sizes) and sizes[0].train_episodes > sizes[1].train_episodes


def _data_words(row: TrialRow) -> str:
    size = data_size(Path(row.run_dir))
    return size.words() if isinstance(size, DataSize) else "its data not recorded"


def doubling_gain(child: TrialRow, parent: TrialRow) -> tuple[bool, str]:
    """Did the run on more data beat the run it warm-started from beyond noise?"""
    words = (f"{child.id} ({_data_words(child)}) scored {pm(child.best_score, child.best_se)} against "
             f"{pm(parent.best_score, parent.best_se)} of {parent.id} ({_data_words(parent)})")
    if child.best_se is None or parent.best_se is None:
        return False, f"{words}, noise unknown"
    diff = child.best_score - parent.best_score
    clear = clear_difference(child.best_score, child.best_se, parent.best_score, parent.best_se)
    verdict = "within noise" if not clear else "a gain beyond noise" if diff > 0 else "a loss beyond noise"
    return clear and diff > 0, (f"{words}: {signed(diff, difference_se(child.best_se, parent.best_se))}, "
                                f"{verdict}")


def _children(ctx: Context, top: TrialRow) -> list[TrialRow]:
    """The scored runs warm-started from a checkpoint of ``top`` on more data than it had."""
    rows = [t for t in ctx.report.trials if t.run_dir and t.best_score is not None and t.id != top.id]
    return [t for t in rows if _is_child(ctx, t, top) and _on_more_data(t, top)]


def _is_child(ctx: Context, row: TrialRow, parent: TrialRow) -> bool:
    owner = _row_of_checkpoint(ctx, _init_of(ctx, row))
    return owner is not None and owner.id == parent.id


def _why_more(ctx: Context, top: TrialRow) -> str | None:
    """Why ``top`` gets more data: it gained from its own doubling, or it overfits; None (and a
    note) when it does not, when its doubling stopped paying, or when a doubling of it ran."""
    parent = _row_of_checkpoint(ctx, _init_of(ctx, top))
    if parent is not None and parent.best_score is not None and _on_more_data(top, parent):
        gained, words = doubling_gain(top, parent)
        if not gained:
            ctx.notes.append(f"more data: the doubling stopped paying: {words}; no more data proposed "
                             f"for {top.id}")
            return None
        why = f"{top.id} gained from twice the data: {words}"
    else:
        overfits, words = overfitting(next((c for c in ctx.report.curves if c.id == top.id), None))
        if not overfits:
            ctx.notes.append(f"no more data for {top.id}: it does not overfit ({words})")
            return None
        why = f"{top.id} overfits ({words})"
    children = _children(ctx, top)
    if children:
        gained, words = doubling_gain(children[0], top)
        ctx.notes.append(f"more data for {top.id} already tried: {words}"
                         + ("" if gained else "; the doubling stopped paying"))
        return None
    return why


def more_data(ctx: Context, best: Cell) -> None:
    """A warm start of the best run's best.pt on twice the training episodes."""
    found = best_run(ctx, best)
    if found is None:
        return
    top = found[0]
    run_dir = Path(top.run_dir)
    best_pt = RunLayout(run_dir).best
    why = _why_more(ctx, top)
    if why is None:
        return
    size = data_size(run_dir)
    plan = doubled(size) if isinstance(size, DataSize) else size
    if isinstance(plan, str) or not best_pt.is_file():
        ctx.notes.append(f"no more data for {top.id}: {plan if isinstance(plan, str) else f'{best_pt} is missing'}")
        return
    changes, words = plan
    settings = {**(settings_of(run_dir) or {}), **changes}
    if ctx.tried.has(settings, init_from=best_pt):
        ctx.notes.append(f"more data for {top.id} already tried (a warm start of its best.pt with "
                         f"{', '.join(f'{k}={v}' for k, v in changes.items())})")
        return
    propose(ctx, "more-data", top, changes, top.seed if isinstance(top.seed, int) else 42,
             f"{why}; warm start of its best.pt on {words}",
             extra=["--init-from", shown_path(best_pt)], tid=_doubled_id(top.id, changes))


# curriculum ------------------------------------------------------------------
def _curriculum_tried(ctx: Context, base: TrialRow) -> list[str]:
    """The runs of the best cell's settings but for a curriculum (any seed)."""
    settings = settings_of(Path(base.run_dir)) or {}
    return sorted(r.id for r in ctx.tried.variants(settings, CURRICULUM_KEY)
                  if r.settings.get(CURRICULUM_KEY) not in (None, "none"))


def curriculum(ctx: Context, best: Cell) -> None:
    """``data.curriculum=easy_first`` on the best run when runs of its cell diverged or it stalled
    early, unless a curriculum was tried for the cell."""
    base = base_run(ctx, best)
    if base is None:
        return
    diverged = sorted(t.id for t in ctx.trials_of(best) if t.status == "diverged")
    is_stalled, words = stalled(next((c for c in ctx.report.curves if c.id == base.id), None))
    if diverged:
        why = f"{len(diverged)} run(s) of the best cell {best.label} diverged ({', '.join(diverged)})"
    elif is_stalled:
        why = f"the best run {base.id} stalled early: {words}"
    else:
        ctx.notes.append(f"no curriculum for {best.label}: no run of it diverged and {base.id} did not "
                         f"stall ({words})")
        return
    tried = _curriculum_tried(ctx, base)
    if tried:
        ctx.notes.append(f"a curriculum was already tried for the best cell {best.label} ({', '.join(tried)})")
        return
    propose(ctx, "curriculum", base, {CURRICULUM_KEY: CURRICULUM},
             base.seed if isinstance(base.seed, int) else 42,
             f"{why}; the same run on a curriculum, {CURRICULUM} (the shortest demonstrations first, "
             "the pool growing to all of them by half of training)",
             tid=f"{base.id.rsplit('/', 1)[-1]}-{CURRICULUM}")
