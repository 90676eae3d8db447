"""heatmap.png, curves.png and the comparison's difference heatmap (matplotlib is optional)."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from imf.atomic import atomic_write_bytes
from imf.report.model import METRIC, Curve, Trends
from imf.report.render import heat_grid, heat_label

MATPLOTLIB_MISSING = ("PNG figures skipped: matplotlib is not installed "
                      "(install it with: pip install 'imf[plot]')")


def _matplotlib() -> tuple[Any, Any] | None:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure, FigureCanvasAgg


def _save(fig: Any, canvas_cls: Any, path: Path) -> None:
    canvas = canvas_cls(fig)
    fig.tight_layout()
    buffer = io.BytesIO()
    canvas.print_png(buffer)
    atomic_write_bytes(path, buffer.getvalue())


def _grid_axes(ax: Any, embs: list[int], layers: list[int]) -> None:
    ax.set_xticks(range(len(embs)), [str(e) for e in embs])
    ax.set_yticks(range(len(layers)), [str(n) for n in layers])
    ax.set(xlabel="n_emb", ylabel="n_layer")


def _mark_missing(ax: Any, i: int, j: int, text: str) -> None:
    from matplotlib.patches import Rectangle
    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#eeeeee", edgecolor="#999999",
                           hatch="//", linewidth=0.5))
    ax.text(j, i, text, ha="center", va="center", fontsize=8, color="#555555")


def write_heatmap(trends: Trends, path: Path, score: str = f"max {METRIC}") -> str | None:
    """Mean over seeds of ``score`` (the report's ranking) per (n_layer, n_emb) on a fixed 0-1
    colour range, with ± SE and n in each cell; cells not run or not scored are hatched. A
    notice when skipped."""
    if not any(isinstance(c.n_emb, int) and isinstance(c.n_layer, int) for c in trends.cells):
        return f"{path.name} skipped: no trial has both n_emb and n_layer"
    mpl = _matplotlib()
    if mpl is None:
        return MATPLOTLIB_MISSING
    figure_cls, canvas_cls = mpl
    embs, layers, mean, se, count = heat_grid(trends)
    fig = figure_cls(figsize=(3.0 + 1.4 * len(embs), 2.2 + 0.8 * len(layers)), dpi=120)
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(mean), cmap="viridis", vmin=0.0, vmax=1.0,
                      origin="lower", aspect="auto")
    _grid_axes(ax, embs, layers)
    ax.set_title(f"mean over seeds of {score}\n± SE, n = scored trials; colour range fixed 0-1",
                 fontsize=9)
    for (i, j), value in np.ndenumerate(mean):
        n = int(count[i, j])
        if np.isnan(value):
            _mark_missing(ax, i, j, heat_label(value, se[i, j], n))
        else:
            ax.text(j, i, heat_label(value, se[i, j], n, sep="\n"), ha="center", va="center",
                    fontsize=8, color="white" if value < 0.5 else "black")
    fig.colorbar(image, ax=ax)
    _save(fig, canvas_cls, path)
    return None


def _cell_colours(curves: list[Curve]) -> dict[str, Any]:
    from matplotlib import colormaps
    cells = sorted({c.cell or c.id for c in curves})
    palette = colormaps["tab10" if len(cells) <= 10 else "tab20"]
    return {cell: palette(k % palette.N) for k, cell in enumerate(cells)}


X_LABELS = {"epoch": "epoch", "steps": "optimizer steps", "samples": "training samples",
            "minutes": "training minutes (the budget's clock)"}
_X_COLUMN = {"steps": 1, "samples": 2, "minutes": 3}  # in Curve.progress


def _at(curve: Curve, x: str) -> dict[int, float]:
    """Epoch (from 1) -> the value of ``x`` there."""
    if x == "epoch":
        epochs = [r[0] for r in curve.progress] + [p[0] for p in curve.rollouts] + [v[0] for v in curve.val_loss]
        return {e: float(e) for e in epochs if e is not None}
    column = _X_COLUMN[x]
    return {row[0]: float(row[column]) for row in curve.progress if row[column] is not None}


def curve_points(curve: Curve, x: str) -> list[tuple[float, float, float | None]]:
    """(x, score, se) per rollout whose epoch has a value of ``x``."""
    at = _at(curve, x)
    return [(at[e], s, se) for e, s, se in curve.rollouts if e is not None and e in at]


def loss_points(curve: Curve, x: str) -> list[tuple[float, float]]:
    at = _at(curve, x)
    return [(at[e], loss) for e, loss in curve.val_loss if e in at]


def _draw_curves(score_ax: Any, loss_ax: Any, curves: list[Curve], x: str) -> None:
    colour = _cell_colours(curves)
    labelled: set[str] = set()
    for curve in curves:
        cell = curve.cell or curve.id
        _score_line(score_ax, curve_points(curve, x), colour[cell], None if cell in labelled else cell)
        labelled.add(cell)
        losses = loss_points(curve, x)
        if losses:
            xs, values = zip(*losses)
            loss_ax.plot(xs, values, color=colour[cell], linewidth=1.2, marker="o" if len(xs) == 1 else None)


def write_curves(curves: list[Curve], path: Path, x: str = "epoch") -> str | None:
    """test_mean_score ± SE and val loss against ``x`` (epoch, steps, samples or minutes), one
    line per trial (a marker for a single rollout), one colour per cell."""
    drawn = [c for c in curves if curve_points(c, x) or loss_points(c, x)]
    if not drawn:
        return (f"{path.name} skipped: no trial logged a rollout or a val loss"
                + ("" if x == "epoch" else f" with its {x}"))
    mpl = _matplotlib()
    if mpl is None:
        return MATPLOTLIB_MISSING
    figure_cls, canvas_cls = mpl
    from matplotlib.ticker import MaxNLocator
    fig = figure_cls(figsize=(11, 4.2), dpi=110)
    score_ax, loss_ax = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    if x in ("epoch", "steps"):
        for ax in (score_ax, loss_ax):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _draw_curves(score_ax, loss_ax, drawn, x)
    score_ax.set(xlabel=X_LABELS[x], ylabel=METRIC, ylim=(0, 1),
                 title=f"{METRIC} per rollout (band: ± SE over episodes)")
    loss_ax.set(xlabel=X_LABELS[x], ylabel="val loss", title="validation loss")
    losses = [v for c in drawn for _, v in c.val_loss]
    if losses and min(losses) > 0 and max(losses) > 10 * min(losses):  # log only for a wide range
        loss_ax.set_yscale("log")
    score_ax.legend(title="cell", fontsize=7, title_fontsize=8, loc="best")
    _save(fig, canvas_cls, path)
    return None


def _score_line(ax: Any, points: list[tuple[float, float, float | None]], colour: Any, label: str | None) -> None:
    if not points:
        return
    epochs = np.array([p[0] for p in points], dtype=float)
    scores = np.array([p[1] for p in points], dtype=float)
    ses = np.array([np.nan if p[2] is None else p[2] for p in points], dtype=float)
    ax.plot(epochs, scores, color=colour, linewidth=1.2, marker="o",
            markersize=6 if len(points) == 1 else 2.5, label=label)  # one rollout: a visible marker
    if np.all(np.isnan(ses)):
        return
    if len(points) == 1:  # a band needs two points
        ax.errorbar(epochs, scores, yerr=ses, color=colour, capsize=3, linewidth=1)
    else:
        ax.fill_between(epochs, scores - ses, scores + ses, color=colour, alpha=0.18, linewidth=0)


def _difference_grid(cells: list[dict[str, Any]]) -> tuple[list[int], list[int], np.ndarray, list[list[str]]]:
    embs = sorted({c["n_emb"] for c in cells})
    layers = sorted({c["n_layer"] for c in cells})
    diff = np.full((len(layers), len(embs)), np.nan)
    text = [["not in both"] * len(embs) for _ in layers]
    for c in cells:
        i, j = layers.index(c["n_layer"]), embs.index(c["n_emb"])
        diff[i, j] = c["diff"]
        noise = "" if c["se"] is None else f"\n± {c['se']:.3f}"
        text[i][j] = f"{c['diff']:+.3f}{' *' if c['clear'] else ''}{noise}\nn={c['n_a']}/{c['n_b']}"
    return embs, layers, diff, text


def write_difference_heatmap(cells: list[dict[str, Any]], title: str, path: Path) -> str | None:
    """B - A per (n_layer, n_emb) on a diverging scale centred on 0, symmetric, at least ±0.2."""
    sized = [c for c in cells if isinstance(c["n_emb"], int) and isinstance(c["n_layer"], int)]
    if not sized:
        return f"{path.name} skipped: no shared cell has both n_emb and n_layer"
    mpl = _matplotlib()
    if mpl is None:
        return MATPLOTLIB_MISSING
    figure_cls, canvas_cls = mpl
    embs, layers, diff, text = _difference_grid(sized)
    limit = max(0.2, float(np.ceil(np.nanmax(np.abs(diff)) * 10) / 10))
    fig = figure_cls(figsize=(3.0 + 1.4 * len(embs), 2.4 + 0.8 * len(layers)), dpi=120)
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(diff), cmap="RdBu", vmin=-limit, vmax=limit,
                      origin="lower", aspect="auto")
    _grid_axes(ax, embs, layers)
    ax.set_title(f"{title}\n* beyond noise (1.96 SE); colour range ±{limit:.1f}, centred on 0",
                 fontsize=9)
    for (i, j), value in np.ndenumerate(diff):
        if np.isnan(value):
            _mark_missing(ax, i, j, text[i][j])
        else:
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=8,
                    color="white" if abs(value) > 0.6 * limit else "black")
    fig.colorbar(image, ax=ax)
    _save(fig, canvas_cls, path)
    return None
