"""Rank the trials of a sweep (or any run folders), with their noise, and compare two sweeps.

``imf report`` reads run folders only (logs.json.txt, summary.json, config.yaml,
final_eval.json, sweep.json, scoreboard.json); Diffusion Policy run folders work too. It
writes report.md, report.json, report.csv, heatmap.png and curves.png (matplotlib is
optional) into the one folder reported or --out (two sweeps A B compared: compare.* into B),
never into a folder it was not given. Parts: collect (reading), analysis (cells, ties,
trends), render (text, markdown, csv), figures (PNGs), compare (two sweeps).
"""
from __future__ import annotations

from pathlib import Path

from imf.atomic import atomic_write_json, atomic_write_text
from imf.errors import ReportError
from imf.report.analysis import build_cells, compute_trends, rank_trials, score_rows, shared_config
from imf.report.basis import RANK_BY, X_AXES, basis_of, check_rank_by, default_x, ranking_of, reach_words
from imf.report.collect import check_folder, collect, fill_added_settings, read_config
from imf.report.compare import (Comparison, compare_reports, render_compare_text,
                                write_compare_files)
from imf.report.metric_terms import IMF, Terms, report_terms, summary_terms, terms_of
from imf.report.figures import MATPLOTLIB_MISSING, write_curves, write_heatmap
from imf.report.model import LAST_K, METRIC, AxisTrend, Cell, Curve, Group, Report, TrialRow, Trends
from imf.report.render import (CSV_FIELDS, heatmap_text, render_csv, render_markdown, render_text,
                               trend_lines)
from imf.store import is_run_dir

__all__ = ["CSV_FIELDS", "LAST_K", "MATPLOTLIB_MISSING", "METRIC", "RANK_BY", "AxisTrend", "Cell", "Comparison",
           "Curve", "Group", "Report", "TrialRow", "Trends", "build_comparison", "build_report",
           "compute_trends", "default_out", "heatmap_text", "is_comparison", "not_written_note",
           "render_compare_text", "render_csv", "render_markdown", "render_text", "trend_lines",
           "write_compare_files", "write_files", "write_report",
           # what suggest, the loop and the sweep read of a report: its terms, basis and trial configs
           "IMF", "Terms", "basis_of", "fill_added_settings", "reach_words", "read_config", "report_terms",
           "summary_terms"]


def build_report(paths: list[Path], last_k: int = LAST_K, x_axis: str | None = None,
                 rank_by: str | None = None) -> Report:
    """Read the sweep folders and run folders in ``paths``; rank, group by seed, find trends.
    ``x_axis`` of curves.png: epoch, steps, samples or minutes (default: what the budget was).
    ``rank_by``: max, last-k or selection, the score that ranks the trials and that the cells,
    trends and best cell average (default: selection where every scored trial has one, else max)."""
    if not paths:
        raise ReportError("no folders given; give a sweep folder or run folders")
    if last_k < 1:
        raise ReportError(f"--last-k {last_k}: give 1 or more rollouts to average")
    if x_axis is not None and x_axis not in X_AXES:
        raise ReportError(f"--x {x_axis!r}: the curves' x-axis is one of {', '.join(X_AXES)}")
    check_rank_by(rank_by)
    notices: list[str] = []
    runs = collect(list(paths), notices, last_k)
    rows = [r.row for r in runs]
    if not rows:
        raise ReportError(f"no trial under {', '.join(str(p) for p in paths)}; nothing to report")
    trained = [r for r in runs if not r.row.is_ensemble]  # ensembles: ranked, never counted
    ranking = ranking_of(rows, rank_by, last_k)
    score_rows(rows, ranking)
    cells = build_cells(trained)
    rank_trials(rows)
    terms = terms_of(rows)  # a program's metric as written, or imf's score
    trends = compute_trends(cells, [r.row for r in trained], ranking, terms)
    x_axis = x_axis or default_x(basis_of(r.row for r in trained))
    return Report(trials=rows, trends=trends, sources=[str(Path(p)) for p in paths], notices=notices,
                  last_k=last_k, curves=[r.curve for r in runs], config=shared_config(runs), x_axis=x_axis,
                  ranked_by=ranking.to_dict() | terms.to_dict())


def is_comparison(paths: list[Path], compare: bool | None) -> bool:
    """Two sweep folders (not run folders) are compared unless ``compare`` is False; True asks
    for it explicitly."""
    if compare and len(paths) != 2:
        raise ReportError(f"--compare takes two sweep folders (A B), got {len(paths)} folder(s)")
    if len(paths) != 2 or compare is False:
        return False
    for path in map(Path, paths):
        check_folder(path)
    if compare is None and any(is_run_dir(Path(p)) for p in paths):
        return False
    if Path(paths[0]).resolve() == Path(paths[1]).resolve():
        raise ReportError(f"{paths[0]} and {paths[1]} are the same folder; compare two sweeps")
    return True


def build_comparison(a: Path, b: Path, last_k: int = LAST_K, rank_by: str | None = None) -> Comparison:
    """Report each sweep, then compare their shared cells (B - A) on one score: ``rank_by``, or
    by default the selection score where both sweeps rank by it, else max."""
    report_a, report_b = (build_report([Path(p)], last_k, rank_by=rank_by) for p in (a, b))
    if report_a.ranked_by["by"] != report_b.ranked_by["by"]:  # one side lacks selection scores
        report_a, report_b = (build_report([Path(p)], last_k, rank_by="max") for p in (a, b))
    return compare_reports(report_a, report_b, Path(a), Path(b))


def default_out(paths: list[Path], comparison: bool = False) -> Path | None:
    """Where report files go without --out: the one folder reported, or B of a comparison of
    two sweeps A B (the files are B's comparison against A). None, so nothing is written, for
    several folders or a run folder: no run folder, and no folder that was not named (the
    current folder included), is written into."""
    folder = _named_folder(paths, comparison)
    return None if folder is None or is_run_dir(folder) else folder


def _named_folder(paths: list[Path], comparison: bool) -> Path | None:
    if comparison:
        return Path(paths[1])
    return Path(paths[0]) if len(paths) == 1 else None


def not_written_note(paths: list[Path], comparison: bool = False) -> str:
    """Why ``default_out`` gave no folder, and what to do."""
    folder = _named_folder(paths, comparison)
    if folder is None:
        why = f"{len(paths)} folders given"
    elif folder.resolve() == Path.cwd().resolve():
        why = "the current folder is a run folder"
    else:
        why = f"{folder} is a run folder"
    return f"report files not written: {why}; give --out FOLDER to write them"


def write_files(report: Report, out_dir: Path) -> list[Path]:
    """Write report.md/.json/.csv, heatmap.png and curves.png into ``out_dir``; the paths."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ReportError(f"--out {out_dir} is a file; give a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    figures, drawn = [], []
    score = report.ranked_by.get("name", f"max {METRIC}")
    if not report_terms(report.ranked_by).program:  # a program's trials have no model size to map
        drawn.append(("heatmap.png", write_heatmap(report.trends, out_dir / "heatmap.png", score)))
    drawn.append(("curves.png", write_curves(report.curves, out_dir / "curves.png", report.x_axis)))
    for name, notice in drawn:
        if notice is None:
            figures.append(name)
        elif notice not in report.notices:
            report.notices.append(notice)
    atomic_write_json(out_dir / "report.json", report.to_dict())
    atomic_write_text(out_dir / "report.csv", render_csv(report))
    atomic_write_text(out_dir / "report.md", render_markdown(report, figures))
    return [out_dir / name for name in ["report.md", "report.json", "report.csv", *figures]]


def write_report(sweep_dir: Path, out_dir: Path | None = None, last_k: int = LAST_K,
                 rank_by: str | None = None) -> Report:
    """Build the report of ``sweep_dir`` and write its files there (or into ``out_dir``)."""
    report = build_report([Path(sweep_dir)], last_k, rank_by=rank_by)
    write_files(report, Path(out_dir) if out_dir is not None else Path(sweep_dir))
    return report
