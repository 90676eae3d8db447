"""Compare two sweeps cell by cell: the difference B - A with its noise, and what it says per axis."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from imf.atomic import atomic_write_json, atomic_write_text
from imf.clock import now_iso
from imf.errors import ReportError
from imf.report.axes import combined_se
from imf.report.basis import basis_of, reach_words
from imf.report.differs import confound_note, config_differences, differs_line
from imf.report.figures import write_difference_heatmap
from imf.report.model import Cell, Report
from imf.report.render import NOISE_RULE, markdown_table
from imf.stats import clear_difference, difference_se, fmt, pm, signed
from imf.tables import csv_text, table, to_text

AXES = ("n_emb", "n_layer")
CSV_FIELDS = ("n_emb", "n_layer", "params", "cell_a", "cell_b", "a", "se_a", "n_a", "b", "se_b",
              "n_b", "diff", "se", "z", "clear", "verdict", "seeds_a", "seeds_b", "selection_diff",
              "selection_se")


@dataclass
class Comparison:
    a: str  # the folders
    b: str
    name_a: str  # how sentences name them
    name_b: str
    differs: dict[str, list[Any]]  # settings that differ between the sweeps: [in A, in B] (imf.report.differs)
    cells: list[dict[str, Any]]  # the shared cells, see CSV_FIELDS
    sentences: list[str]
    notes: list[str] = field(default_factory=list)
    score: str = "max test_mean_score"  # what a cell's mean is of: both reports' ranking
    created: str = field(default_factory=now_iso)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _key(cell: Cell, keys: list[str]) -> tuple[Any, ...]:
    return (cell.n_emb, cell.n_layer, *(json.dumps(cell.params.get(k), default=str) for k in keys))


def _describe(key: tuple[Any, ...]) -> str:
    return f"n_emb {fmt(key[0])} x n_layer {fmt(key[1])}" + "".join(f" {v}" for v in key[2:])


def _index(report: Report, keys: list[str], side: str, notes: list[str]) -> dict[tuple, Cell]:
    index: dict[tuple, list[Cell]] = {}
    for cell in report.trends.cells:
        if cell.mean is not None:
            index.setdefault(_key(cell, keys), []).append(cell)
    for key, cells in index.items():
        if len(cells) > 1:
            notes.append(f"{side} has {len(cells)} cells at {_describe(key)} that differ in "
                         f"settings the other sweep does not vary; left out")
    return {k: v[0] for k, v in index.items() if len(v) == 1}


def _names(differs: dict[str, list[Any]], a: Path, b: Path) -> tuple[str, str]:
    if len(differs) == 1:
        key, (va, vb) = next(iter(differs.items()))
        if isinstance(va, str) and isinstance(vb, str):
            return va, vb
        return f"{key}={va}", f"{key}={vb}"
    name_a, name_b = Path(a).resolve().name, Path(b).resolve().name
    return (name_a, name_b) if name_a != name_b else ("A", "B")


def _scored_seeds(cell: Cell, report: Report) -> list[Any]:
    """The seeds whose trials' scores the cell's mean is over (its n), in seed order."""
    scored = {r.id for r in report.trials if r.cell == cell.label and _score(r) is not None}
    seeds = {s for t, s in zip(cell.trials, cell.seeds) if t in scored}
    return sorted(seeds, key=lambda s: (not isinstance(s, int), s if isinstance(s, int) else 0, str(s)))


def _score(row: Any) -> float | None:
    """A trial's score on its report's basis: ``score`` where rows carry one (the report's
    ranking: max, last-k or selection), else max, what cells averaged before rows had one."""
    return row.score if hasattr(row, "score") else row.best_score


def _cell_diff(key: tuple, ca: Cell, cb: Cell, keys: list[str],
               seeds: tuple[list[Any], list[Any]]) -> dict[str, Any]:
    se = difference_se(ca.se, cb.se) if ca.se is not None and cb.se is not None else None
    diff = cb.mean - ca.mean
    selection = cb.selection - ca.selection if ca.selection is not None and cb.selection is not None else None
    selection_se = (difference_se(ca.selection_se, cb.selection_se)
                if selection is not None and ca.selection_se is not None and cb.selection_se is not None else None)
    return {"n_emb": ca.n_emb, "n_layer": ca.n_layer, "params": dict(zip(keys, key[2:])),
            "cell_a": ca.label, "cell_b": cb.label, "a": ca.mean, "se_a": ca.se, "n_a": ca.n,
            "b": cb.mean, "se_b": cb.se, "n_b": cb.n, "diff": diff, "se": se,
            "z": diff / se if se else None,
            "clear": se is not None and clear_difference(diff, se, 0.0, 0.0),
            "verdict": None, "seeds_a": seeds[0], "seeds_b": seeds[1],
            "selection_diff": selection, "selection_se": selection_se}


def _verdict(diff: float, se: float | None, name_a: str, name_b: str) -> str:
    if se is None:
        return "noise unknown"
    if not clear_difference(diff, se, 0.0, 0.0):
        return "no clear difference"
    return f"{name_b} better" if diff > 0 else f"{name_a} better"


def cell_verdict(diff: float, se: float | None, name_a: str, name_b: str) -> str:
    """One cell's verdict on the difference of its means over all its seeds: "a tie" within
    1.96 SE of the difference (imf.stats.clear_difference, the report's rule), else who is ahead."""
    if se is None:
        return "noise unknown"
    return _verdict(diff, se, name_a, name_b) if clear_difference(diff, se, 0.0, 0.0) else "a tie"


def _seed_notes(cells: list[dict[str, Any]]) -> list[str]:
    """Cells whose two sides rest on different seeds: their verdict is not on the same seeds."""
    out = []
    for c in cells:
        if c["seeds_a"] != c["seeds_b"]:
            out.append(f"n_emb {fmt(c['n_emb'])} x n_layer {fmt(c['n_layer'])}: A's mean is over seeds "
                       f"{_seed_list(c['seeds_a'])}, B's over {_seed_list(c['seeds_b'])}; its verdict "
                       "compares different seeds")
    return out


def _seed_list(seeds: list[Any]) -> str:
    return ", ".join(str(s) for s in seeds) or "none"


def _axis_sentence(axis: str, cells: list[dict[str, Any]], name_a: str, name_b: str) -> str | None:
    values = sorted({c[axis] for c in cells if isinstance(c[axis], int)})
    if not values:
        return None
    parts: dict[str, list[str]] = {}
    for value in values:
        here = [c for c in cells if c[axis] == value]
        diff = sum(c["diff"] for c in here) / len(here)
        se = combined_se([c["se"] for c in here])
        parts.setdefault(_verdict(diff, se, name_a, name_b), []).append(
            f"{value} ({signed(diff, se, 3)})")
    clauses = []
    for verdict, items in parts.items():
        where = f"at {axis} {', '.join(items)}"
        if verdict.endswith(" better"):
            winner = verdict[:-len(" better")]
            loser = name_a if winner == name_b else name_b
            clauses.append(f"{winner} beats {loser} {where}")
        else:
            clauses.append(f"{verdict} {where}")
    return f"{axis}: " + "; ".join(clauses) + f" ({name_b} - {name_a}, ± SE)"


def compare_reports(report_a: Report, report_b: Report, a: Path, b: Path) -> Comparison:
    """Match the cells of two reports by n_emb, n_layer and the settings both sweeps vary."""
    keys = sorted({k for c in report_a.trends.cells for k in c.params}
                  & {k for c in report_b.trends.cells for k in c.params})
    notes: list[str] = []
    cells_a = _index(report_a, keys, "A", notes)
    cells_b = _index(report_b, keys, "B", notes)
    shared = [k for k in cells_a if k in cells_b]
    if not shared:
        raise ReportError(f"{a} and {b} share no scored cell (A: {_listing(cells_a)}; "
                          f"B: {_listing(cells_b)}); compare two sweeps of the same grid")
    only_a, only_b = [k for k in cells_a if k not in cells_b], [k for k in cells_b if k not in cells_a]
    if only_a or only_b:
        notes.append(f"the grids differ: compared the {len(shared)} shared cell(s) only; "
                     f"only in A: {_listing(only_a)}; only in B: {_listing(only_b)}")
    differs = config_differences(report_a, report_b)
    name_a, name_b = _names(differs, a, b)
    cells = [_cell_diff(k, cells_a[k], cells_b[k], keys,
                        (_scored_seeds(cells_a[k], report_a), _scored_seeds(cells_b[k], report_b)))
             for k in sorted(shared, key=str)]
    cells.sort(key=lambda c: (c["n_emb"] or 0, c["n_layer"] or 0, str(c["params"])))
    for c in cells:
        c["verdict"] = cell_verdict(c["diff"], c["se"], name_a, name_b)
    notes += [n for n in [confound_note(differs)] if n] + _seed_notes(cells)
    sentences = [s for axis in AXES if (s := _axis_sentence(axis, cells, name_a, name_b))]
    diff = sum(c["diff"] for c in cells) / len(cells)
    se = combined_se([c["se"] for c in cells])
    sentences.append(f"over all {len(cells)} shared cell(s): {name_b} - {name_a} = "
                     f"{signed(diff, se, 3)}, "
                     f"{_verdict(diff, se, name_a, name_b)}")
    sentences.append(_basis_sentence(report_a, report_b, cells, name_a, name_b))
    return Comparison(str(a), str(b), name_a, name_b, differs, cells, sentences, notes,
                      score=report_b.ranked_by.get("name", "max test_mean_score"))


def _basis_sentence(report_a: Report, report_b: Report, cells: list[dict[str, Any]],
                    name_a: str, name_b: str) -> str:
    """What both sides were equal in, and whether the shared cells' trials made as many steps."""
    basis_a = basis_of(t for t in report_a.trials if not t.is_ensemble)
    basis_b = basis_of(t for t in report_b.trials if not t.is_ensemble)
    text = (f"basis: both {basis_a.text}" if basis_a.text == basis_b.text
            else f"basis: {name_a} {basis_a.text}, {name_b} {basis_b.text}")
    shared_a = [t for t in report_a.trials if t.cell in {c["cell_a"] for c in cells}]
    shared_b = [t for t in report_b.trials if t.cell in {c["cell_b"] for c in cells}]
    reach = reach_words([(name_b, shared_b), (name_a, shared_a)], f"{name_b} against {name_a}")
    return text + (f": in the shared cells {reach}" if reach else "")


def _listing(keys: Any) -> str:
    return ", ".join(_describe(k) for k in keys) or "none"


def _rows(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    a, b = comparison.name_a, comparison.name_b
    keys = sorted({k for c in comparison.cells for k in c["params"]})
    selection = any(c["selection_diff"] is not None for c in comparison.cells)
    headers = (["n_emb", "n_layer", *keys, f"{a} (n)", f"{b} (n)", f"{b} - {a}", "z", "verdict"]
               + (["selection diff"] if selection else []))
    rows = []
    for c in comparison.cells:
        z = c.get("z")
        row = [fmt(c["n_emb"]), fmt(c["n_layer"]), *(str(c["params"][k]) for k in keys),
               f"{pm(c['a'], c['se_a'])} ({c['n_a']})", f"{pm(c['b'], c['se_b'])} ({c['n_b']})",
               signed(c["diff"], c["se"]), f"{z:+.2f}" if z is not None else "-",
               c.get("verdict") or cell_verdict(c["diff"], c["se"], a, b)]
        rows.append(row + ([signed(c["selection_diff"], c["selection_se"])] if selection else []))
    return headers, rows


def _header(comparison: Comparison) -> list[str]:
    return [f"A = {comparison.a} ({comparison.name_a}), B = {comparison.b} ({comparison.name_b})",
            differs_line(comparison.differs),
            f"per cell: mean over seeds of {comparison.score}; {NOISE_RULE}"]


def render_compare_text(comparison: Comparison) -> str:
    out = _header(comparison) + [""] + to_text(table(*_rows(comparison))).splitlines()
    out += [""] + comparison.sentences + [f"note: {n}" for n in comparison.notes]
    return "\n".join(out) + "\n"


def render_compare_markdown(comparison: Comparison, heatmap: bool) -> str:
    out = ["# imf report: comparison", ""] + [f"{line}  " for line in _header(comparison)]
    out += ["", "## Per axis", ""] + [f"- {s}" for s in comparison.sentences]
    out += ["", "## Cells", ""] + markdown_table(*_rows(comparison))
    if heatmap:
        out += ["", f"![{comparison.name_b} - {comparison.name_a} per cell](compare_heatmap.png)"]
    if comparison.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in comparison.notes]
    return "\n".join(out) + "\n"


def _csv(comparison: Comparison) -> str:
    rows = ({**cell, "params": json.dumps(cell["params"]) if cell["params"] else "",
             **{k: " ".join(str(s) for s in cell.get(k) or []) for k in ("seeds_a", "seeds_b")}}
            for cell in comparison.cells)
    return csv_text(rows, CSV_FIELDS)


def write_compare_files(comparison: Comparison, out_dir: Path) -> list[Path]:
    """compare.md/.json/.csv and compare_heatmap.png in ``out_dir``; the paths written."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ReportError(f"--out {out_dir} is a file; give a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    title = f"{comparison.name_b} - {comparison.name_a}: mean over seeds of {comparison.score}"
    notice = write_difference_heatmap(comparison.cells, title, out_dir / "compare_heatmap.png")
    if notice and notice not in comparison.notes:
        comparison.notes.append(notice)
    atomic_write_json(out_dir / "compare.json", comparison.to_dict())
    atomic_write_text(out_dir / "compare.csv", _csv(comparison))
    atomic_write_text(out_dir / "compare.md", render_compare_markdown(comparison, notice is None))
    names = ["compare.md", "compare.json", "compare.csv"] + ([] if notice else ["compare_heatmap.png"])
    return [out_dir / n for n in names]
