"""Every number in the published text (README.md, docs/*.md, benchmarks/RESULTS.md and RUNS.md),
tables and code included, with what it is, in benchmarks/published_numbers.json:

    python benchmarks/claims/published_numbers.py --check      # exit 1 naming each number the register does not hold
    python benchmarks/claims/published_numbers.py --register   # after reviewing a change: register the text's numbers again
    python benchmarks/claims/published_numbers.py --summary    # how many numbers of each kind, per file

A number is held by the register under its file, its section (the `#`/`##`/`###` heading above
it), its text and its place among the same number in that section; so a number edited by hand
(0.845 to 0.945) is one the register does not hold, and ``--check`` fails until it is reviewed
and registered again. Numbers between ``claims`` markers are not registered: claims.py writes
and checks them from the JSON. Each registered number has a kind:

- ``json``: it equals a field of the committed JSON (benchmarks/learning_results/*.json,
  benchmarks/*.json) at the precision printed, and ``--check`` reads that field again;
- ``date``: a date or a time of day;
- ``code``: in a code block or a code span (a command's argument, a config key's value, a
  transcript of a command's output);
- ``constant``, ``argument``, ``count``, ``quoted`` (another project's number), ``derived`` (computed
  by the script that wrote it from committed JSON fields: a mean over seeds, a difference, a unit
  change; not one field itself), ``measured`` (a measurement without JSON behind it yet), each with
  a ``why``: a reviewer's word, kept by ``--register`` while the number stands;
- ``unreviewed``: none of these yet. ``--summary`` counts them; they are registered, so an edit
  to one still fails the check.

claims.py --check runs this check; tests/test_published_numbers.py changes each registered number in turn
and expects it to fail.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
REGISTER = Path("benchmarks") / "published_numbers.json"
# A number is taken whole (atomic group: "1.86x" is 1.86, never 1), with its exponent ("4e-3") and
# one unit letter after it ("2.72M", "1.86x", "3k", "5G"); a letter run that is no unit
# ("128x2", "2324b0b") makes it no number.
NUMBER = re.compile(r"(?<![\w.])[-+]?(?>\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?)(?=[xMkG]?(?!\w))")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?|\b\d{2}:\d{2}(?::\d{2})?\b")
PASSAGE = re.compile(r"<!-- claims:([\w-]+) -->\n.*?<!-- /claims:\1 -->", re.S)


def published(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "benchmarks" / "RESULTS.md",
            root / "benchmarks" / "RUNS.md"]


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with ``pattern``'s matches blanked to spaces (newlines kept), so offsets stay."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def sections(text: str) -> Iterator[tuple[str, int, str]]:
    """Each section of ``text`` (claims passages blanked): its heading line ("" before the first),
    the offset where it starts, and its text. Sections are independent: a heading inside a code
    fence is not one, so each section starts outside a fence."""
    plain = _blank(text, PASSAGE)
    heading, start, offset, fenced = "", 0, 0, False
    for line in plain.splitlines(keepends=True):
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,3} ", line):
            if offset > start or heading:
                yield heading, start, plain[start:offset]
            heading, start = line.strip(), offset
        offset += len(line)
    yield heading, start, plain[start:]


def section_numbers(heading: str, chunk: str, offset: int = 0) -> Iterator[dict[str, Any]]:
    """Each number of one section's text (as ``sections`` gives it); ``at`` counts from ``offset``."""
    seen, fenced = Counter(), False
    for line in chunk.splitlines(keepends=True):
        stripped = line.strip()
        is_heading = not fenced and re.match(r"#{1,3} ", line) is not None
        if stripped.startswith("```"):
            fenced = not fenced
        code_line = fenced or line.startswith("    ") or stripped.startswith("```")
        spans = [(m.start(), m.end()) for m in re.finditer(r"`[^`\n]*`", line)]
        dates = [(m.start(), m.end()) for m in DATE.finditer(line)]
        for m in NUMBER.finditer(line):
            if is_heading and m.start() < len(line.split(" ", 1)[0]):
                continue
            token = m.group(0)
            seen[token] += 1
            inside = lambda ranges: any(a <= m.start() and m.end() <= b for a, b in ranges)  # noqa: E731
            kind = "code" if code_line or inside(spans) else "date" if inside(dates) else None
            yield {"section": heading, "number": token, "nth": seen[token], "kind": kind,
                   "at": offset + m.start(), "line": line.rstrip("\n"), "unit": line[m.end():m.end() + 1]}
        offset += len(line)


def numbers(text: str) -> Iterator[dict[str, Any]]:
    """Each number outside the claims passages: its section, its text, whether it is in code or a
    date, and its place among the same number in its section."""
    for heading, start, chunk in sections(text):
        yield from section_numbers(heading, chunk, start)


SKIP = ("curve", "per_seed", "per_seed_success")  # long arrays: a coincidence, not a source


def _leaves(value: Any, path: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, bool) or path.rsplit(".", 1)[-1] in SKIP:
        return
    if isinstance(value, (int, float)):
        yield path, float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")


def json_values(root: Path) -> dict[str, float]:
    """Every number of the committed JSON a published number may trace to, by its path."""
    files = sorted((root / "benchmarks" / "learning_results").glob("*.json")) + sorted(
        p for p in (root / "benchmarks").glob("*.json") if p.name != REGISTER.name)
    out = {}
    for path in files:
        if path.is_file() and path.name != "holdout_ledger.json":
            out.update(dict(_leaves(json.loads(path.read_text()), path.name)))
    return out


def _digits(token: str) -> int:
    """Significant digits of ``token``'s mantissa ("4e-3": 1)."""
    return len(token.split("e")[0].replace(",", "").lstrip("+-").replace(".", "").lstrip("0"))


def _shows(token: str, value: float, unit: str = "") -> bool:
    """Whether ``value`` printed at ``token``'s precision is ``token`` (a fraction printed as a
    percentage where ``unit`` is %, a count in millions where it is M)."""
    text = token.replace(",", "")
    decimals = len(text.split(".")[1]) if "." in text else 0
    for scaled in (value, *([100 * value] if unit == "%" else []), *([value / 1e6] if unit == "M" else [])):
        if math.isfinite(scaled) and (f"{scaled:.{decimals}f}" == text.lstrip("+")
                                      or f"{scaled:+.{decimals}f}" == text):
            return True
    return False


def trace(token: str, values: dict[str, float], named: str, unit: str = "") -> str | None:
    """The first field that prints as ``token`` in a JSON file that its section's text names
    (``named``: "grid_cost.json", "image_preset.json"); only for numbers of 3 significant digits or more (a 2 or a 0.5 would match fields
    it has nothing to do with)."""
    if _digits(token) < 3:
        return None
    return next((path for path, value in sorted(values.items(), key=lambda kv: ("[" in kv[0], kv[0]))
                 if path.split(".json", 1)[0] + ".json" in named and _shows(token, value, unit)), None)


def section_texts(text: str) -> dict[str, str]:
    """Each section's own text (its heading included), outside the claims passages."""
    out, section = {}, ""
    for line in _blank(text, PASSAGE).splitlines():
        if re.match(r"#{1,3} ", line):
            section = line.strip()
        out[section] = out.get(section, "") + line + "\n"
    return out


def _key(file: str, n: dict[str, Any]) -> str:
    return f"{file} | {n['section']} | {n['number']} #{n['nth']}"


# What a reviewer may say a number is, with a "why": kept by --register while the number stands.
REVIEWED = ("constant", "argument", "count", "quoted", "derived", "measured")


def register(root: Path) -> dict[str, Any]:
    """Every published number, with its kind (and the JSON field of a traced one)."""
    values, entries = json_values(root), {}
    old = _load(root)
    for path in published(root):
        file, text = path.relative_to(root).as_posix(), path.read_text()
        named = section_texts(text)
        for n in numbers(text):
            key = _key(file, n)
            entry, kept = {"kind": n["kind"]}, old.get(key, {})
            if kept.get("kind") in REVIEWED and n["kind"] is None:
                entry = kept  # a reviewer's word on it stands while the number does
            elif entry["kind"] is None:
                field = kept.get("json") if kept.get("kind") == "json" and kept.get("json") in values and \
                    _shows(n["number"], values[kept["json"]], n["unit"]) else \
                    trace(n["number"], values, named.get(n["section"], ""), n["unit"])
                entry = {"kind": "json", "json": field} if field else {"kind": "unreviewed"}
            entries[key] = entry
    return entries


def _load(root: Path) -> dict[str, Any]:
    path = root / REGISTER
    return json.loads(path.read_text())["numbers"] if path.is_file() else {}


def _problems(file: str, found: Iterator[dict[str, Any]], entries: dict[str, Any],
              values: dict[str, float]) -> list[str]:
    """What ``found`` (numbers of ``file``) and ``entries`` (the register's, for the same text)
    disagree on; one line each."""
    problems, keys = [], set()
    for n in found:
        key = _key(file, n)
        keys.add(key)
        entry = entries.get(key)
        where = f"{file}, {n['section'] or 'top'}: {n['number']} in {n['line'].strip()[:100]!r}"
        if entry is None:
            problems.append(f"{where}: not in the register; review it, then `python benchmarks/claims/published_numbers.py --register`")
        elif entry["kind"] == "json" and not (entry["json"] in values
                                              and _shows(n["number"], values[entry["json"]], n["unit"])):
            problems.append(f"{where}: the JSON field {entry['json']} no longer prints as it")
    for key in sorted(set(entries) - keys):
        problems.append(f"{key}: registered, no longer in the text; `python benchmarks/claims/published_numbers.py --register`")
    return problems


def check(root: Path = ROOT, files: list[Path] | None = None, values: dict[str, float] | None = None) -> list[str]:
    """Each published number the register does not hold (or holds as a JSON field that no longer
    prints as it), and each registered number no longer in the text; one line each. ``files``:
    only these (all published files by default); ``values``: the JSON's numbers, if read already."""
    entries, problems = _load(root), []
    values = json_values(root) if values is None else values
    for path in published(root) if files is None else files:
        file = path.relative_to(root).as_posix()
        mine = {k: v for k, v in entries.items() if k.split(" | ", 1)[0] == file}
        text = path.read_text()
        twice = [h for h, n in Counter(h for h, _, _ in sections(text)).items() if n > 1]
        problems += [f"{file}: two sections headed {h!r}; the register tells numbers apart by their "
                     "section, so give each heading its own words" for h in twice]
        problems += _problems(file, numbers(text), mine, values)
    return problems


def check_section(file: str, heading: str, chunk: str, entries: dict[str, Any],
                  values: dict[str, float]) -> list[str]:
    """``check`` for one section's text (as ``sections`` gives it), against a register already
    read: sections are counted apart, so a change inside one shows in its own check."""
    prefix = f"{file} | {heading} | "
    return _problems(file, section_numbers(heading, chunk),
                     {k: v for k, v in entries.items() if k.startswith(prefix)}, values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true")
    what.add_argument("--register", action="store_true")
    what.add_argument("--summary", action="store_true")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    if args.register:
        entries = register(args.root)
        (args.root / REGISTER).write_text(json.dumps({"about": __doc__.split("\n\n")[0].replace("\n", " "),
                                                      "numbers": entries}, indent=0, ensure_ascii=False) + "\n")
        print(f"published_numbers.py: {len(entries)} numbers registered")
    elif args.summary:
        counts: dict[str, Counter] = {}
        for key, entry in _load(args.root).items():
            counts.setdefault(key.split(" | ")[0], Counter())[entry["kind"]] += 1
        for file, c in counts.items():
            print(f"{file}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    else:
        problems = check(args.root)
        for line in problems[:50]:
            print(f"published_numbers.py: {line}", file=sys.stderr)
        if problems:
            print(f"published_numbers.py: {len(problems)} problem(s)", file=sys.stderr)
            sys.exit(1)
        print("published_numbers.py: every published number is registered")


if __name__ == "__main__":
    main()
