"""Rank the trials of a sweep (or any run folders) and show how size moves the score.

``imf report`` reads run folders only (logs.json.txt, summary.json, config.yaml,
sweep.json, scoreboard.json); Diffusion Policy run folders work too. It writes
report.md, report.json, report.csv and heatmap.png (matplotlib is optional).
"""
from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from imf.errors import ReportError
from imf.store.base import now_iso
from imf.store.files import atomic_write_bytes, atomic_write_json, atomic_write_text
from imf.store.runs import (HYDRA_CONFIG, LOGS, SUMMARY, find_run_dirs, first_number, is_run_dir,
                            model_size, read_json_object, read_log, read_sweep_trials, summarize_log)
from imf.store.scoreboard import ScoreboardStore
from imf.tables import table, to_text

METRIC = "test_mean_score"
CSV_FIELDS = ("rank", "id", "status", "n_emb", "n_layer", "final_epoch", "best_score",
              "best_epoch", "success_rate", "queue", "source", "run_dir", "note")
MATPLOTLIB_MISSING = ("heatmap.png skipped: matplotlib is not installed "
                      "(install it with: pip install 'imf[plot]')")


@dataclass
class TrialRow:
    id: str
    run_dir: str | None
    source: str  # "imf", "diffusion_policy" or "scoreboard" (a record without its folder)
    status: str
    n_emb: int | None = None
    n_layer: int | None = None
    final_epoch: int | None = None
    best_score: float | None = None
    best_epoch: int | None = None
    success_rate: float | None = None  # at the epoch of the best score
    queue: str | None = None
    note: str = ""
    rank: int | None = None


@dataclass
class Group:
    value: int  # the n_emb or n_layer of this group
    trials: int
    mean: float
    best: float
    best_trial: str


@dataclass
class Trends:
    by_n_emb: list[Group] = field(default_factory=list)
    by_n_layer: list[Group] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)  # n_emb, n_layer, trials, mean, best
    best_cell: dict[str, Any] | None = None
    width: dict[str, Any] | None = None  # delta, low, high, text
    depth: dict[str, Any] | None = None


@dataclass
class Report:
    trials: list[TrialRow]
    trends: Trends
    sources: list[str]
    notices: list[str] = field(default_factory=list)
    metric: str = METRIC
    created: str = field(default_factory=now_iso)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# reading ----------------------------------------------------------------------
def _read_run(run_dir: Path, trial_id: str, sweep: dict[str, dict[str, Any]],
              notices: list[str]) -> TrialRow:
    summary = None
    if (run_dir / SUMMARY).is_file():
        try:
            summary = read_json_object(run_dir / SUMMARY)
        except ValueError as exc:
            notices.append(f"ignored {exc}")
    trial_id = str((summary or {}).get("id") or trial_id)
    state = sweep.get(trial_id, {})
    rows = []
    if (run_dir / LOGS).is_file():
        log = read_log(run_dir / LOGS)
        rows = log.rows
        if log.skipped:
            notices.append(f"skipped {log.skipped} unreadable line(s) in {run_dir / LOGS}")
    dp = summary is None and ((run_dir / HYDRA_CONFIG).is_file()
                              or any("test/mean_score" in r for r in rows))
    status = (summary or {}).get("status") or state.get("status")
    status = status or ("completed" if dp and rows else "unknown")
    row = TrialRow(id=trial_id, run_dir=str(run_dir.resolve()), status=str(status),
                   source="diffusion_policy" if dp else "imf",
                   queue=state.get("queue"), note=str((summary or {}).get("note") or ""))
    row.n_emb, row.n_layer = model_size(run_dir, summary, trial_id)
    _fill_scores(row, rows, summary or {})
    return row


def _fill_scores(row: TrialRow, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    log = summarize_log(rows)
    done = summary.get("epochs_done")  # a count: the last epoch counted from 1
    row.final_epoch = done if log.final_epoch is None else _counted(log.final_epoch)
    row.best_score, row.best_epoch = log.best_score, _counted(log.best_epoch)
    row.success_rate = log.success_rate
    if row.best_score is None and first_number(summary, ("best_score",)) is not None:
        row.best_score, row.best_epoch = float(summary["best_score"]), _counted(summary.get("best_epoch"))
    if row.success_rate is None:
        row.success_rate = first_number(summary, ("best_success_rate",))


def _counted(epoch: Any) -> int | None:
    """Reports count epochs from 1; logs.json.txt and summary.json keep the 0-based index."""
    return epoch + 1 if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def _from_scoreboard(record: dict[str, Any], sweep: dict[str, dict[str, Any]]) -> TrialRow:
    config = record.get("config") if isinstance(record.get("config"), dict) else {}
    return TrialRow(id=record["id"], run_dir=record.get("run_dir"), source="scoreboard",
                    status=str(record.get("status") or "unknown"),
                    n_emb=config.get("n_emb"), n_layer=config.get("n_layer"),
                    final_epoch=record.get("epochs"), best_score=first_number(record, ("score",)),
                    queue=sweep.get(record["id"], {}).get("queue"), note=record.get("note") or "")


def _read_sweep(sweep_dir: Path, notices: list[str]) -> list[TrialRow]:
    sweep = read_sweep_trials(sweep_dir)
    rows = [_read_run(d, d.relative_to(sweep_dir).as_posix(), sweep, notices)
            for d in find_run_dirs(sweep_dir)]
    seen = {r.id for r in rows}
    for record in ScoreboardStore(sweep_dir).read():
        if record["id"] not in seen:  # recorded, but its folder is not here
            rows.append(_from_scoreboard(record, sweep))
            seen.add(record["id"])
    for trial_id, state in sweep.items():
        if trial_id not in seen:  # planned or queued, no folder yet
            row = TrialRow(id=trial_id, run_dir=None, source="imf", queue=state.get("queue"),
                           status=str(state.get("status") or "unknown"))
            row.n_emb, row.n_layer = model_size(sweep_dir / trial_id, state, trial_id)
            rows.append(row)
    return rows


def _collect(paths: list[Path], notices: list[str]) -> list[TrialRow]:
    rows: list[TrialRow] = []
    for path in paths:
        path = Path(path)
        if not path.is_dir():
            what = "does not exist" if not path.exists() else "is not a folder"
            raise ReportError(f"{path} {what}; give a sweep folder or run folders")
        if is_run_dir(path):
            rows.append(_read_run(path, path.name, read_sweep_trials(path.parent), notices))
            continue
        found = _read_sweep(path, notices)
        if not found:
            raise ReportError(f"no run folders in {path} (a run folder holds {LOGS} "
                              f"or {SUMMARY})")
        rows.extend(found)
    return rows


def build_report(paths: list[Path]) -> Report:
    """Read the sweep folders and run folders in ``paths`` and rank their trials."""
    if not paths:
        raise ReportError("no folders given; give a sweep folder or run folders")
    notices: list[str] = []
    rows = _collect(list(paths), notices)
    if not any(r.best_score is not None for r in rows):
        raise ReportError(f"no {METRIC} in any of the {len(rows)} trial(s) under "
                          f"{', '.join(str(p) for p in paths)}; nothing to rank yet")
    rows.sort(key=lambda r: (r.best_score is None, -(r.best_score or 0.0),
                             r.best_epoch if isinstance(r.best_epoch, int) else 1 << 30, r.id))
    for rank, row in enumerate(r for r in rows if r.best_score is not None):
        row.rank = rank + 1
    return Report(trials=rows, trends=compute_trends(rows),
                  sources=[str(Path(p)) for p in paths], notices=notices)


# trends -----------------------------------------------------------------------
def _groups(rows: list[TrialRow], key: str) -> list[Group]:
    groups: dict[int, list[TrialRow]] = {}
    for row in rows:
        value = getattr(row, key)
        if isinstance(value, int) and row.best_score is not None:
            groups.setdefault(value, []).append(row)
    result = []
    for value in sorted(groups):
        members = groups[value]
        top = max(members, key=lambda r: r.best_score)
        result.append(Group(value, len(members), float(np.mean([r.best_score for r in members])),
                            top.best_score, top.id))
    return result


def _cells(rows: list[TrialRow]) -> list[dict[str, Any]]:
    by_cell: dict[tuple[int, int], list[float]] = {}
    for row in rows:
        sized = isinstance(row.n_emb, int) and isinstance(row.n_layer, int)
        if sized and row.best_score is not None:
            by_cell.setdefault((row.n_emb, row.n_layer), []).append(row.best_score)
    return [{"n_emb": e, "n_layer": l, "trials": len(s), "mean": float(np.mean(s)),
             "best": max(s)} for (e, l), s in sorted(by_cell.items())]


def _effect(groups: list[Group], kind: str, key: str) -> dict[str, Any] | None:
    """How the mean score moves from the smallest to the largest ``key``."""
    if not groups:
        return None
    low, high = groups[0], groups[-1]
    if low is high:
        return {"delta": None, "low": low.value, "high": high.value,
                "text": f"{kind}: only {key} {low.value} was run, no trend"}
    delta = high.mean - low.mean
    verb = "helps" if delta > 0 else "hurts" if delta < 0 else "makes no difference"
    return {"delta": delta, "low": low.value, "high": high.value,
            "text": f"{kind} {verb}: {delta:+.4f} (mean score at {key} {high.value} "
                    f"minus {key} {low.value})"}


def compute_trends(rows: list[TrialRow]) -> Trends:
    """Mean and best score by n_emb and by n_layer, the best cell, width and depth effects."""
    trends = Trends(by_n_emb=_groups(rows, "n_emb"), by_n_layer=_groups(rows, "n_layer"),
                    cells=_cells(rows))
    if trends.cells:
        trends.best_cell = max(trends.cells, key=lambda c: c["mean"])  # first max wins ties
    trends.width = _effect(trends.by_n_emb, "width", "n_emb")
    trends.depth = _effect(trends.by_n_layer, "depth", "n_layer")
    return trends


# rendering --------------------------------------------------------------------
def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _ranking_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    headers = ["rank", "trial", "status", "n_emb", "n_layer", "final epoch", "best score",
               "best epoch", "success"]
    rows = [[_fmt(t.rank), t.id, t.status, _fmt(t.n_emb), _fmt(t.n_layer), _fmt(t.final_epoch),
             _fmt(t.best_score), _fmt(t.best_epoch), _fmt(t.success_rate, 3)]
            for t in report.trials]
    return headers, rows


def _markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def trend_lines(trends: Trends) -> list[str]:
    """The trends in words, one finding a line."""
    lines = []
    for key, groups in (("n_emb", trends.by_n_emb), ("n_layer", trends.by_n_layer)):
        for g in groups:
            lines.append(f"{key} {g.value}: mean {g.mean:.4f}, best {g.best:.4f} "
                         f"({g.best_trial}), {g.trials} trial(s)")
    if trends.best_cell:
        c = trends.best_cell
        lines.append(f"best cell: n_emb {c['n_emb']} x n_layer {c['n_layer']}, mean "
                     f"{c['mean']:.4f} over {c['trials']} trial(s), best {c['best']:.4f}")
    lines += [effect["text"] for effect in (trends.width, trends.depth) if effect]
    return lines or ["no trial has a known n_emb or n_layer: no trends"]


def _grid(trends: Trends) -> tuple[list[int], list[int], np.ndarray]:
    embs = sorted({c["n_emb"] for c in trends.cells})
    layers = sorted({c["n_layer"] for c in trends.cells})
    grid = np.full((len(layers), len(embs)), np.nan)
    for c in trends.cells:
        grid[layers.index(c["n_layer"]), embs.index(c["n_emb"])] = c["mean"]
    return embs, layers, grid


def heatmap_text(trends: Trends, shades: str = ".:-=+*#%@") -> str:
    """Mean score by n_layer (rows) and n_emb (columns), with an ASCII shade per cell."""
    if not trends.cells:
        return "(no heatmap: no trial has both n_emb and n_layer)"
    embs, layers, grid = _grid(trends)
    low, high = np.nanmin(grid), np.nanmax(grid)
    def cell(v: float) -> str:
        if np.isnan(v):
            return "-".center(7)
        level = (v - low) / (high - low) if high > low else 1.0
        return f"{v:.3f} {shades[round(level * (len(shades) - 1))]}"
    lines = [f"mean {METRIC}, n_layer (rows) x n_emb (columns); shade low '{shades}' high",
             "n_layer\\n_emb " + " ".join(f"{e:>7}" for e in embs)]
    for i, layer in enumerate(layers):
        lines.append(f"{layer:>13} " + " ".join(cell(v) for v in grid[i]))
    return "\n".join(lines)


def _counts(report: Report) -> str:
    scored = sum(t.rank is not None for t in report.trials)
    return f"{len(report.trials)} trial(s), {scored} scored"


def render_text(report: Report) -> str:
    """Ranking table, trends and the text heatmap, for the terminal."""
    out = [f"{_counts(report)}; score = max {METRIC}", ""]
    out += to_text(table(*_ranking_rows(report))).splitlines()
    out += ["", "trends:"] + [f"  {line}" for line in trend_lines(report.trends)]
    out += ["", heatmap_text(report.trends)]
    return "\n".join(out) + "\n"


def render_markdown(report: Report, heatmap_png: bool) -> str:
    """report.md: the same content as the terminal, as markdown."""
    out = ["# imf report", "",
           f"{_counts(report)}, from {', '.join(report.sources)} ({report.created}). "
           f"Score: max {METRIC} over the evaluated epochs; success: the test success rate "
           "at that epoch.", "",
           "## Ranking", ""]
    out += _markdown_table(*_ranking_rows(report))
    out += ["", "## Trends", ""] + [f"- {line}" for line in trend_lines(report.trends)]
    out += ["", "## Heatmap", ""]
    if heatmap_png:
        out += [f"![mean {METRIC} by n_emb and n_layer](heatmap.png)", ""]
    out += ["```text", heatmap_text(report.trends), "```"]
    if report.notices:
        out += ["", "## Notices", ""] + [f"- {n}" for n in report.notices]
    return "\n".join(out) + "\n"


def render_csv(report: Report) -> str:
    """report.csv: one row per trial, ranked."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for trial in report.trials:
        row = asdict(trial)
        writer.writerow({k: "" if row[k] is None else row[k] for k in CSV_FIELDS})
    return buffer.getvalue()


# writing ----------------------------------------------------------------------
def write_heatmap(trends: Trends, path: Path) -> str | None:
    """Write heatmap.png; returns a notice instead when it cannot be drawn."""
    if not trends.cells:
        return f"{path.name} skipped: no trial has both n_emb and n_layer"
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return MATPLOTLIB_MISSING
    embs, layers, grid = _grid(trends)
    fig = Figure(figsize=(2.5 + 1.1 * len(embs), 2.0 + 0.7 * len(layers)), dpi=120)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", origin="lower", aspect="auto")
    ax.set_xticks(range(len(embs)), [str(e) for e in embs])
    ax.set_yticks(range(len(layers)), [str(n) for n in layers])
    ax.set(xlabel="n_emb", ylabel="n_layer", title=f"mean {METRIC}")
    middle = (np.nanmin(grid) + np.nanmax(grid)) / 2
    for (i, j), value in np.ndenumerate(grid):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.3f}", ha="center", va="center",
                    color="white" if value < middle else "black")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    buffer = io.BytesIO()
    canvas.print_png(buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return None


def write_files(report: Report, out_dir: Path) -> list[Path]:
    """Write report.md/.json/.csv and heatmap.png into ``out_dir``; returns the paths."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ReportError(f"--out {out_dir} is a file; give a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    notice = write_heatmap(report.trends, out_dir / "heatmap.png")
    if notice:
        report.notices.append(notice)
    atomic_write_json(out_dir / "report.json", report.to_dict())
    atomic_write_text(out_dir / "report.csv", render_csv(report))
    atomic_write_text(out_dir / "report.md", render_markdown(report, heatmap_png=not notice))
    names = ["report.md", "report.json", "report.csv"] + ([] if notice else ["heatmap.png"])
    return [out_dir / name for name in names]


def write_report(sweep_dir: Path, out_dir: Path | None = None) -> Report:
    """Build the report of ``sweep_dir`` and write its files there (or into ``out_dir``)."""
    report = build_report([Path(sweep_dir)])
    write_files(report, Path(out_dir) if out_dir is not None else Path(sweep_dir))
    return report
