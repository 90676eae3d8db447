"""Tables for people, drawn by rich: styled on a terminal, plain aligned text in files and pipes."""
from __future__ import annotations

import csv
import io
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table


def table(headers: Iterable[str], rows: Iterable[Iterable[Any]]) -> Table:
    """Columns separated by two spaces, a bold header, no box (so the text form reads like a
    plain table and splits on whitespace)."""
    out = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold",
                show_edge=False)
    for header in headers:
        out.add_column(header, no_wrap=True)
    for row in rows:
        out.add_row(*row)
    return out


def to_text(renderable: Any, width: int = 400) -> str:
    """``renderable`` as plain text (no colour codes), trailing spaces dropped."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, force_terminal=False,
            highlight=False).print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def csv_text(rows: Iterable[dict[str, Any]], fields: list[str]) -> str:
    """CSV with a header of ``fields``, one line per row; None is written as an empty cell."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row[k] is None else row[k] for k in fields})
    return buffer.getvalue()
