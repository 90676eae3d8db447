"""The exit codes the docs publish are the ones imf returns: README's one-row table and
docs/commands.md's table against imf/errors.py's OUTCOME_EXIT."""
from __future__ import annotations

import re
from pathlib import Path

from imf import errors

ROOT = Path(__file__).resolve().parent.parent


def _codes_in(table_rows: list[str]) -> set[str]:
    return {cell for row in table_rows for cell in re.findall(r"\|\s*(\d+(?:\+N)?)\s*(?=\|)", row)}


def _expected() -> set[str]:
    codes = {str(code) for code in errors.OUTCOME_EXIT.values()} | {str(errors.ImfError.exit_code)}
    return codes | {f"{errors.EXIT_SIGNAL_BASE}+N"}


def test_readme_lists_every_exit_code():
    rows = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| exit |")]
    assert rows, "README.md has no '| exit |' row"
    assert _codes_in(rows) == _expected()


def test_the_commands_doc_lists_every_exit_code():
    text = (ROOT / "docs" / "commands.md").read_text()
    table = text.split("| exit | outcome |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert _codes_in(rows) == _expected()
