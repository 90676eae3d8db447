"""The import rules of shared/spec/ARCHITECTURE.md, checked in fresh interpreters."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "imf"

# part -> parts of imf it must never import (directly, anywhere in its modules)
FORBIDDEN = {
    "scheduler": {"train", "model", "objectives", "policy", "pusht", "data"},
    "store": {"train", "model", "objectives", "policy", "scheduler", "pusht", "report"},
    "attention": {"model", "objectives", "train", "scheduler", "store", "pusht", "data", "policy"},
    "data": {"model", "objectives", "train", "scheduler", "store", "pusht", "policy"},
    "pusht": {"model", "objectives", "train", "scheduler", "store", "policy"},
    "model": {"objectives", "train", "scheduler", "store", "pusht", "policy"},
    "registry": {"model", "objectives", "train", "scheduler", "store", "pusht", "data", "policy"},
}


def _imf_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "imf" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_part_imports_only_what_it_may(part):
    files = list((PACKAGE / part).rglob("*.py"))
    assert files
    for path in files:
        bad = _imf_imports(path) & FORBIDDEN[part]
        assert not bad, f"{path.relative_to(PACKAGE.parent)} imports imf.{sorted(bad)}"


def test_nothing_imports_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("cli.py", "__main__.py"):
            assert "cli" not in _imf_imports(path), path


@pytest.mark.parametrize("module", ["imf.cli", "imf.scheduler.sweep", "imf.scheduler.status", "imf.report"])
def test_controller_side_starts_without_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
