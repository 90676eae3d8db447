"""benchmarks/RESULTS.md: each benchmark owns one `## ...` section and replaces only that."""
from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(section: str, text: str | list[str], path: Path = RESULTS) -> None:
    """Replace (or append) the section headed ``section``; ``text`` starts with that heading."""
    body = ("\n".join(text) if isinstance(text, list) else text).rstrip("\n") + "\n"
    if not body.startswith(section):
        body = section + "\n\n" + body
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    start = old.find(section + "\n")
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + body
    else:
        end = old.find("\n## ", start + len(section))
        new = old[:start] + body + ("" if end < 0 else "\n" + old[end + 1:])
    path.write_text(new)
