"""The report as terminal text, report.md and report.csv."""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from imf.report.attempts import attempt_lines
from imf.report.axes import combined_se, shown
from imf.report.metric_terms import IMF, Terms, imf_label, report_terms
from imf.report.model import METRIC, Report, Trends
from imf.seeds import HOLDOUT, SELECTION
from imf.stats import PM, Z95, fmt, pm
from imf.tables import csv_text, table, to_text

CSV_FIELDS = ("rank", "id", "status", "n_emb", "n_layer", "seed", "cell", "final_epoch",
              "best_score", "best_se", "episodes", "best_epoch", "tied", "last_k", "last_k_se",
              "last_k_n", "selection", "selection_se", "selection_episodes", "selection_success", "holdout", "holdout_se",
              "holdout_success", "holdout_episodes", "holdout_looks", "success_rate", "rollouts",
              "restarts", "attempts", "queue", "source", "run_dir", "note")
NO_SIZES = "no trial has a known n_emb or n_layer: no trends"
MAX_SETTING_COLUMNS = 3  # settings that vary between cells shown as columns of their own
ENSEMBLE_RULE = ("status ensemble: an imf ensemble of trained checkpoints, listed after the trials "
                 "with its one selection-seed score and set against the best trial on the same "
                 "selection seeds (it has no max over test rollouts); no trial, cell, trend or seed")
NOISE_RULE = (f"{PM} is one standard error; an effect or a gap is claimed only when it is larger "
              f"than {Z95} standard errors (a 95% interval that excludes 0)")


def _vs_best(tied: bool | None, rank: int | None) -> str:
    if rank is None:
        return "-"
    if rank == 1:
        return "best"
    return "?" if tied is None else "tied" if tied else "lower"


MODEL_COLUMNS = ("n_emb", "n_layer")


def model_columns(items: list[Any], keys: tuple[str, ...] = MODEL_COLUMNS) -> list[str]:
    """The model-size columns (or other ``keys``) some row has a value in (a trainer program's
    trials have no model size)."""
    return [k for k in keys if any(getattr(i, k, None) is not None for i in items)]


def _filled(headers: list[str], rows: list[list[str]], items: list[Any], optional: dict[str, str],
            terms: Terms) -> tuple[list[str], list[list[str]]]:
    """A program's table without the ``optional`` columns (header: attribute) no item fills."""
    if not terms.program:
        return headers, rows
    empty = {h for h, key in optional.items() if not model_columns(items, (key,))}
    keep = [i for i, h in enumerate(headers) if h not in empty]
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def setting_headers(keys: list[str]) -> list[str]:
    """The varying settings' columns (a program's params without their "params." prefix)."""
    return [k.removeprefix("params.") for k in keys] if len(keys) <= MAX_SETTING_COLUMNS else ["settings"]


def ranking_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    """One row per trial; without model sizes (a program's trials), the settings the trials vary
    (a sweep's grid keys) stand where n_emb and n_layer would."""
    holdout = any(t.holdout_looks for t in report.trials)
    terms = report_terms(report.ranked_by)
    model = model_columns(report.trials)
    keys = [] if model else sorted({k for c in report.trends.cells for k in c.params})
    params = {c.label: c.params for c in report.trends.cells}
    headers = (["rank", "trial", "status", *model, *(setting_headers(keys) if keys else []), "seed", "final epoch",
                f"{terms.name} ({terms.direction})" if terms.program else "max ± SE", "best epoch",
                f"last-{report.last_k} mean", "selection ± SE", "success", "selection success"]
               + (["holdout ± SE", "holdout success"] if holdout else []) + ["vs #1"])
    rows = [[fmt(t.rank), t.id, t.status, *(fmt(getattr(t, k)) for k in model),
             *(_settings(params.get(t.cell, {}), keys) if keys else []), fmt(t.seed),
             fmt(t.final_epoch), _max(t, terms), fmt(t.best_epoch),
             _last_k(t, report.last_k, terms),
             _rescored(terms.value(t.selection), t.selection_se, t.selection_episodes),
             fmt(t.success_rate, 3), fmt(t.selection_success, 3)]
            + ([_holdout(t), fmt(t.holdout_success, 3)] if holdout else [])
            + [t.vs_selection if t.is_ensemble else _vs_best(t.tied, t.rank)]
            for t in report.trials]
    optional = {"best epoch": "best_epoch", f"last-{report.last_k} mean": "last_k", "selection ± SE": "selection",
                "success": "success_rate", "selection success": "selection_success"}
    return _filled(headers, rows, report.trials, optional, terms)


def _max(t: Any, terms: Terms = IMF) -> str:
    if t.is_ensemble:
        return "-"
    if t.best_score is None and not t.rollouts:
        return "no rollout yet"
    return pm(terms.value(t.best_score), t.best_se)


def _last_k(t: Any, k: int, terms: Terms = IMF) -> str:
    """The last-K mean, with its n when the run had fewer than K rollouts."""
    text = pm(terms.value(t.last_k), t.last_k_se)
    return text + (f" (n={t.last_k_n})" if t.last_k is not None and t.last_k_n < k else "")


def _rescored(value: float | None, se: float | None, episodes: int | None) -> str:
    if value is None:
        return "-"
    return pm(value, se) + (f" ({episodes} ep)" if episodes else "")


def _holdout(t) -> str:
    """The latest look, its episodes, and how many looks the run has had."""
    if not t.holdout_looks:
        return "-"
    looks = f"{t.holdout_looks} look{'s' if t.holdout_looks > 1 else ''}"
    if t.holdout_curve_looks:
        looks += f"; {t.holdout_curve_looks} more at snapshots, for a curve"
    return pm(t.holdout, t.holdout_se) + f" ({t.holdout_episodes} ep, {looks})"


def _settings(params: dict[str, Any], keys: list[str]) -> list[str]:
    """One column per varying setting; past MAX_SETTING_COLUMNS, one column of key=value."""
    if len(keys) <= MAX_SETTING_COLUMNS:
        return [fmt(params.get(k)) for k in keys]
    return [", ".join(f"{k.removeprefix('params.')}={fmt(params.get(k))}" for k in keys)]


def cell_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    keys = sorted({k for c in report.trends.cells for k in c.params})
    model = model_columns(report.trends.cells)
    terms = report_terms(report.ranked_by)
    short = terms.score_name(report.ranked_by) if terms.program else report.ranked_by.get("short", "max")
    headers = (["cell", *model] + setting_headers(keys) +
               ["n", "seeds", f"{short}: mean ± sd", "min..max", "SE (from)",
                f"last-{report.last_k}", "selection", "success", "selection success"])
    rows = []
    for c in report.trends.cells:
        seeds = ",".join(str(s) for s in c.seeds if s is not None) or "-"
        seeds += f" ({c.unscored} not scored)" if c.unscored else ""
        seeds += f" (same seed again, counted once: {', '.join(c.duplicates)})" if c.duplicates else ""
        se = "-" if c.se is None else f"{c.se:.4f} ({c.noise})"
        selection = ("-" if c.selection is None
                     else pm(terms.value(c.selection), c.selection_se) + f" (n={c.selection_n})")
        rows.append([c.label, *(fmt(getattr(c, k)) for k in model)] + _settings(c.params, keys) +
                    [str(c.n), seeds, pm(terms.value(c.mean), c.sd), terms.spread(c.low, c.high), se,
                     fmt(terms.value(c.last_k)), selection, fmt(c.success, 3), fmt(c.selection_success, 3)])
    optional = {f"last-{report.last_k}": "last_k", "selection": "selection", "success": "success",
                "selection success": "selection_success"}
    return _filled(headers, rows, report.trends.cells, optional, terms)


def markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def trend_lines(trends: Trends, terms: Terms = IMF) -> list[str]:
    """The trends in words, one finding a line; ``terms``: a program's metric as written."""
    axes = [("n_emb", trends.by_n_emb), ("n_layer", trends.by_n_layer)]
    axes += [(terms.key(a.key), a.groups) for a in trends.axes]
    lines = [] if any(groups for _, groups in axes) else [NO_SIZES]
    for key, groups in axes:
        for g in groups:
            lines.append(f"{key} {shown(g.value)}: {terms.mean_of()}{pm(terms.value(g.mean), g.se)} over "
                         f"{g.cells} cell(s), {g.trials} trial(s); "
                         f"best {pm(terms.value(g.best), g.best_se)} ({g.best_trial})")
    if trends.best_cell:
        c = trends.best_cell
        tied = (f"tied within noise: {', '.join(c['tied_with'])}" if c["tied_with"]
                else "no other cell tied within noise" if c["se"] is not None
                else "noise unknown, ties not checked")
        lines.append(f"best cell: {c['label']} ({_cell_words(trends, c, terms)}), {terms.mean_of()}"
                     f"{pm(terms.value(c['mean']), c['se'])} over {c['n']} seed(s), "
                     f"best {terms.value(c['best']):.4f}; {tied}"
                     + (f"; {c['basis']}" if c.get("basis") else ""))
    effects = [trends.width, trends.depth] + [a.effect for a in trends.axes]
    lines += [effect["text"] for effect in effects if effect]
    lines += [text for text in (trends.selection, trends.holdout) if text]
    return lines


def _cell_words(trends: Trends, best: dict[str, Any], terms: Terms) -> str:
    """"n_emb 256 x n_layer 8", or a program's varied settings: "optim.lr 0.1"."""
    if not terms.program:
        return f"n_emb {fmt(best['n_emb'])} x n_layer {fmt(best['n_layer'])}"
    params = next(c.params for c in trends.cells if c.label == best["label"])
    return ", ".join(f"{terms.key(k)} {shown(v) if isinstance(v, (int, float)) else fmt(v)}"
                     for k, v in params.items()) or "no setting varies"


def heat_grid(trends: Trends) -> tuple[list[int], list[int], np.ndarray, np.ndarray, np.ndarray]:
    """n_emb values, n_layer values, and per (n_layer, n_emb): mean, SE (nan: unknown), n
    (-1: not run, 0: run but not scored). Cells that share a size (other settings) are pooled."""
    sized = [c for c in trends.cells if isinstance(c.n_emb, int) and isinstance(c.n_layer, int)]
    embs = sorted({c.n_emb for c in sized})
    layers = sorted({c.n_layer for c in sized})
    mean, se = np.full((len(layers), len(embs)), np.nan), np.full((len(layers), len(embs)), np.nan)
    count = np.full((len(layers), len(embs)), -1)
    for i, layer in enumerate(layers):
        for j, emb in enumerate(embs):
            here = [c for c in sized if (c.n_emb, c.n_layer) == (emb, layer)]
            scored = [c for c in here if c.mean is not None]
            if here:
                count[i, j] = sum(c.n for c in scored)
            if scored:
                mean[i, j] = sum(c.mean for c in scored) / len(scored)
                pooled = combined_se([c.se for c in scored])
                se[i, j] = np.nan if pooled is None else pooled
    return embs, layers, mean, se, count


def heat_label(mean: float, se: float, n: int, sep: str = " ") -> str:
    if n < 0:
        return "not run"
    if n == 0:
        return "no score"
    noise = "" if np.isnan(se) else f"±{se:.3f}"
    return f"{mean:.3f}{noise}{sep}n={n}"


def heatmap_text(trends: Trends, score: str = f"max {METRIC}") -> str:
    """Mean ``score`` (the report's ranking) by n_layer (rows) and n_emb (columns): mean ± SE
    and n per cell."""
    if not any(isinstance(c.n_emb, int) and isinstance(c.n_layer, int) for c in trends.cells):
        return "(no heatmap: no trial has both n_emb and n_layer)"
    embs, layers, mean, se, count = heat_grid(trends)
    labels = [[heat_label(mean[i, j], se[i, j], int(count[i, j])) for j in range(len(embs))]
              for i in range(len(layers))]
    width = max(13, *(len(s) for row in labels for s in row))
    lines = [f"mean over seeds of {score} ± SE, n = scored trials; n_layer (rows) x n_emb (columns)",
             "n_layer\\n_emb " + " ".join(f"{e:>{width}}" for e in embs)]
    for i, layer in enumerate(layers):
        lines.append(f"{layer:>13} " + " ".join(f"{s:>{width}}" for s in labels[i]))
    return "\n".join(lines)


def stopped_lines(report: Report) -> list[str]:
    """Why each stopped_early trial stopped (successive halving or its own patience)."""
    return [f"{t.id} at epoch {fmt(t.final_epoch)}: {t.note or 'no reason recorded'}"
            for t in report.trials if t.status == "stopped_early"]


def failed_lines(report: Report) -> list[str]:
    """Why each failed trial failed, when its summary says (out of GPU memory: what to run)."""
    return [f"{t.id}: {t.reason}" for t in report.trials if t.status == "failed" and t.reason]


def counts(report: Report) -> str:
    trials = [t for t in report.trials if not t.is_ensemble]
    scored = sum(t.rank is not None for t in trials)
    cells = sum(c.n > 0 for c in report.trends.cells)
    text = f"{len(trials)} trial(s), {scored} scored, in {cells} scored cell(s)"
    ensembles = len(report.trials) - len(trials)
    text += f", and {ensembles} ensemble(s) after them (on the selection seeds)" if ensembles else ""
    basis = report.trends.basis
    return text + (f", compared {basis['text']}" if basis and basis.get("kind") != "unknown" else "")


def _ranked_by(report: Report) -> str:
    """"ranked by selection score (200 selection episodes)": the score that ranks the trials."""
    terms = report_terms(report.ranked_by)
    if terms.program:
        return terms.ranked_text(report.ranked_by)
    return report.ranked_by.get("text", f"ranked by max {METRIC}")


def _score(report: Report) -> str:
    terms = report_terms(report.ranked_by)
    return terms.score_name(report.ranked_by) if terms.program else report.ranked_by.get("name", f"max {METRIC}")


def render_text(report: Report) -> str:
    """Ranking, cells, trends and the text heatmap, for the terminal."""
    out = [f"{counts(report)}; {_ranked_by(report)}; {NOISE_RULE}", ""]
    if any(t.is_ensemble for t in report.trials):
        out[-1:] = [ENSEMBLE_RULE, ""]
    out += to_text(table(*ranking_rows(report))).splitlines()
    out += ["", "cells (trials that differ only in training.seed):"]
    out += to_text(table(*cell_rows(report))).splitlines()
    stopped = stopped_lines(report)
    out += ["", "stopped early:"] + [f"  {line}" for line in stopped] if stopped else []
    failed = failed_lines(report)
    out += ["", "failed:"] + [f"  {line}" for line in failed] if failed else []
    tries = attempt_lines(report.trials)
    out += ["", "attempts (sweep.json):"] + [f"  {line}" for line in tries] if tries else []
    terms = report_terms(report.ranked_by)
    out += ["", "trends:"] + [f"  {line}" for line in trend_lines(report.trends, terms)]
    out += [] if terms.program else ["", heatmap_text(report.trends, _score(report))]
    return "\n".join(out) + "\n"


def render_markdown(report: Report, figures: list[str]) -> str:
    """report.md: the terminal's content as markdown, with the PNGs in ``figures`` embedded."""
    terms = report_terms(report.ranked_by)
    out = ["# imf report", "",
           f"{counts(report)}, from {', '.join(report.sources)} ({report.created}); {_ranked_by(report)}.", ""]
    out += _legend(report) if not terms.program else terms.legend(
        imf_label(report.ranked_by), any(t.selection is not None for t in report.trials), NOISE_RULE)
    out += ["", "## Ranking", ""]
    out += markdown_table(*ranking_rows(report))
    out += ["", "## Cells", "", "Trials that differ only in `training.seed`: mean ± sd of their "
            f"{_score(report)} over seeds, n, min..max.", ""]
    out += markdown_table(*cell_rows(report))
    stopped = stopped_lines(report)
    out += ["", "## Stopped early", ""] + [f"- {line}" for line in stopped] if stopped else []
    failed = failed_lines(report)
    out += ["", "## Failed", ""] + [f"- {line}" for line in failed] if failed else []
    tries = attempt_lines(report.trials)
    out += ["", "## Attempts", ""] + [f"- {line}" for line in tries] if tries else []
    out += ["", "## Trends", ""] + [f"- {line}" for line in trend_lines(report.trends, terms)]
    out += [] if terms.program else _heatmap(report, figures)
    if "curves.png" in figures:
        what = terms.name if terms.program else METRIC
        out += ["", "## Curves", "", f"![{what} and val loss against {report.x_axis}](curves.png)", "",
                f"x-axis: {report.x_axis} (`imf report --x epoch|steps|samples|minutes`)"]
    if report.notices:
        out += ["", "## Notices", ""] + [f"- {n}" for n in report.notices]
    return "\n".join(out) + "\n"


def _heatmap(report: Report, figures: list[str]) -> list[str]:
    out = ["", "## Heatmap", ""]
    if "heatmap.png" in figures:
        out += [f"![mean over seeds of {_score(report)} by n_emb and n_layer](heatmap.png)", ""]
    return out + ["```text", heatmap_text(report.trends, _score(report)), "```"]


def _legend(report: Report) -> list[str]:
    """report.md's legend for imf's trials."""
    return [f"- **max**: max {METRIC} over the evaluated epochs (the headline; optimistic: a maximum "
           "of noisy rollouts), ± the SE of that rollout from its per-episode scores",
           f"- **last-{report.last_k} mean**: mean of the last {report.last_k} rollouts",
           f"- **selection**: the run's final checkpoint (best.pt, or latest.pt where eval.final_checkpoint says so) "
           f"re-scored on the selection seeds ({SELECTION.text}, final_eval.json), which no "
           "rollout during training saw; they choose between runs (the ranking by them, suggest, imf loop)",
           f"- **holdout**: the latest look at the holdout seeds ({HOLDOUT.text}, holdout.json), kept for claims; "
           "every look is counted, and the best of several runs on the holdout is a selection again",
           f"- {ENSEMBLE_RULE}",
           f"- {NOISE_RULE}"]


def render_csv(report: Report) -> str:
    """report.csv: one row per trial, ranked."""
    return csv_text((asdict(trial) for trial in report.trials), CSV_FIELDS)
