"""benchmarks/RESULTS.md and RUNS.md: each benchmark owns one `## ...` section and replaces only that.

RESULTS.md holds the answers by question; RUNS.md every run behind them. A section is replaced
in whichever of the two holds it; a new one is appended to RESULTS.md. A section ends at the next
`## ` or `# ` heading, so the `# ` group headings of RUNS.md stay where they are."""
from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "RESULTS.md"
RUNS = RESULTS.parent / "RUNS.md"


def _start(text: str, section: str) -> int:
    if text.startswith(section + "\n"):
        return 0
    found = text.find("\n" + section + "\n")
    return found + 1 if found >= 0 else -1


def write_section(section: str, text: str | list[str], path: Path = RESULTS) -> None:
    """Replace (or append) the section headed ``section``; ``text`` starts with that heading."""
    body = ("\n".join(text) if isinstance(text, list) else text).rstrip("\n") + "\n"
    if not body.startswith(section):
        body = section + "\n\n" + body
    if path == RESULTS and RUNS.exists() and _start(RUNS.read_text(), section) >= 0 and not (
            RESULTS.exists() and _start(RESULTS.read_text(), section) >= 0):
        path = RUNS
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    start = _start(old, section)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + body
    else:
        after = re.search(r"\n#{1,2} ", old[start + len(section):])
        end = -1 if after is None else start + len(section) + after.start()
        new = old[:start] + body + ("" if end < 0 else "\n" + old[end + 1:])
    path.write_text(new)
