"""The import rules of shared/spec/ARCHITECTURE.md, checked in fresh interpreters."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "imf"

# Which part may import which: shared/spec/ARCHITECTURE.md, plus what imf adds (docs/INTERFACES.md,
# "Import rules"): the policy module is the method side's front (train -> policy -> model,
# objectives, data), and cli -> store for `imf log`, which edits ITERATION_LOG.md through its store.
ALLOWED = {
    "__main__": {"cli"},
    "cli": {"sweep", "scheduler", "train", "report", "suggest", "loop", "pusht", "data", "config", "registry",
            "store", "ensemble"},
    "loop": {"suggest", "sweep", "report", "store", "config", "registry"},  # runs proposals as sweeps
    "sweep": {"scheduler", "store", "report", "config", "registry", "data"},  # a store's episode count
    "scheduler": {"store", "config", "registry"},
    "train": {"objectives", "curricula", "model", "pusht", "data", "trackers", "store", "config", "registry",
              "policy"},
    "curricula": {"pusht"},  # easy_first orders by the T's distance to the task's goal
    "trackers": {"store", "config", "registry"},  # run-folder names from the store's layout
    # imf ensemble: members from the run files, checkpoints and scoring through train's eval path
    "ensemble": {"train", "pusht", "data", "store", "config"},
    "policy": {"model", "objectives", "data", "registry"},
    "objectives": {"model"},
    "model": {"attention", "registry"},
    "pusht": {"data"},
    "report": {"store"},
    "suggest": {"report", "store", "config", "registry"},
    # plugin options are config values: the registry coerces them with the config's rules
    "registry": {"config"},
    "store": set(), "data": set(), "attention": set(), "config": set(),
}
# Leaf helpers anyone may import: they import nothing of imf but each other.
LEAVES = {"errors", "version", "tables", "stats", "atomic", "clock", "typed", "upgrade", "drill", "seeds"}


def _imf_imports(path: Path) -> set[str]:
    """The top-level parts of imf that ``path`` imports, ``from imf import x`` included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"imf.{a.name}" for a in node.names] if node.module == "imf" else [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "imf" and len(parts) > 1:
                found.add(parts[1])
    return found


def _modules() -> list[tuple[str, Path]]:
    """(part, file) for every module of imf."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        out.append((rel[0] if len(rel) > 1 else path.stem, path))  # the folder, or the module
    return out


def test_every_module_belongs_to_a_known_part():
    unknown = {part for part, _ in _modules()} - set(ALLOWED) - LEAVES - {"__init__"}
    assert not unknown, f"add these to ALLOWED or LEAVES (and to docs/INTERFACES.md): {sorted(unknown)}"


def test_the_parser_sees_every_spelling(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import imf.store.runs\nfrom imf import registry\nfrom imf.train import trial\n"
                     "from imf.cli.trial import x\nfrom .local import y\nimport imf\n")
    assert _imf_imports(probe) == {"store", "registry", "train", "cli"}


@pytest.mark.parametrize("part", sorted(set(ALLOWED) | LEAVES))
def test_part_imports_only_what_it_may(part):
    files = [path for p, path in _modules() if p == part]
    assert files
    allowed = ALLOWED.get(part, set()) | LEAVES | {part}
    for path in files:
        bad = _imf_imports(path) - allowed
        assert not bad, f"{path.relative_to(PACKAGE.parent)} imports imf.{sorted(bad)}"


def test_nothing_imports_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] not in ("cli", "__main__.py"):
            assert "cli" not in _imf_imports(path), path


@pytest.mark.slow
@pytest.mark.parametrize("module", ["imf.cli", "imf.sweep.launch", "imf.sweep.status", "imf.report"])
def test_controller_side_starts_without_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
