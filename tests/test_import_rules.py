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
# Leaf helpers anyone may import: they import nothing of imf but each other. ``contracts``: every
# plugin group's Protocol, in one file that the parts with a helper base (scheduler, curricula,
# train) and the registry's check all import, so it sits below all of them (its signatures name
# the parts' types as Any aliases, never by import, so no circle forms, not even for type hints).
LEAVES = {"errors", "version", "tables", "stats", "atomic", "clock", "typed", "upgrade", "drill", "seeds", "faces",
          "contracts"}


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


# Faces: every part's __init__.py names in ``__all__`` what other parts may use, and other parts
# import only from it, never an inner module (``from imf.store.layout import X``, ``import
# imf.store.layout``, ``from imf.sweep import launch``). A part not yet converted keeps a ceiling
# on the imports that reach past its face, so the number can only go down; the goal is an empty
# allowance (every part is converted today: keep it empty).
FACE_ALLOWANCE: dict[str, int] = {}


def _folder_parts() -> list[str]:
    return sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


def _past_faces(path: Path, part: str) -> list[str]:
    """The inner modules of other parts (folders) that ``path``, a module of ``part``, imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        modules = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
            if node.module.count(".") == 1:  # from imf.sweep import launch: a submodule by name
                modules += [f"{node.module}.{a.name}" for a in node.names]
        for module in modules:
            parts = module.split(".")
            if parts[0] != "imf" or len(parts) < 3 or parts[1] == part or not (PACKAGE / parts[1]).is_dir():
                continue
            inner = PACKAGE.joinpath(*parts[1:3])
            if inner.with_suffix(".py").is_file() or inner.is_dir():
                found.append(".".join(parts[:3]))
    return found


def _face_names(part: str) -> set[str]:
    """``__all__`` of imf/<part>/__init__.py, read without importing it: a list, or a list built from
    the module's literal dicts and lists (``sorted(_FACE)``, ``[..., *_LAZY]``)."""
    tree = ast.parse((PACKAGE / part / "__init__.py").read_text())
    env: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.List, ast.Tuple)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id != "__all__":
                env[target.id] = ast.literal_eval(node.value)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(eval(compile(ast.Expression(node.value), "__all__", "eval"), {"sorted": sorted}, env))
    return set()


def test_the_face_parser_sees_every_spelling(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import imf.store.runs\nfrom imf.store import layout, read_log\nfrom imf.sweep.plan import x\n"
                     "from imf.report import build_report\nfrom imf.train.trial import y\nfrom imf import stats\n")
    assert _past_faces(probe, "train") == ["imf.store.runs", "imf.store.layout", "imf.sweep.plan"]


def test_other_parts_import_only_a_face():
    reached: dict[str, list[str]] = {}
    for part, path in _modules():
        for module in _past_faces(path, part):
            reached.setdefault(module.split(".")[1], []).append(f"{path.relative_to(PACKAGE.parent)}: {module}")
    for target, where in sorted(reached.items()):
        ceiling = FACE_ALLOWANCE.get(target, 0)
        assert len(where) <= ceiling, (f"import from imf.{target} (its __init__.py, the part's face; add the name "
                                       f"to its __all__), not its inner modules: " + "; ".join(where))
    lower = {t: len(reached.get(t, [])) for t, n in FACE_ALLOWANCE.items() if len(reached.get(t, [])) < n}
    assert not lower, f"fewer imports reach past these faces now: lower FACE_ALLOWANCE to {lower}"


@pytest.mark.parametrize("part", _folder_parts())
def test_every_part_has_a_face(part):
    assert _face_names(part), f"imf/{part}/__init__.py lists no __all__"


def test_what_other_parts_import_from_a_face_is_in_its_all():
    faces = {part: _face_names(part) for part in _folder_parts()}
    for part, path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                target = node.module.removeprefix("imf.")
                if target in faces and target != part:
                    missing = {a.name for a in node.names} - faces[target]
                    where = path.relative_to(PACKAGE.parent)
                    assert not missing, f"{where}: add {sorted(missing)} to imf.{target}.__all__"


# benchmarks/ is a consumer, as a third-party package would be (issue #48, round 3, item 2): it
# imports imf only through the parts' faces and the leaves, and runs trials through the CLI. The
# white-box profilers below swap or time one inner function in place, which takes its module;
# each is named here with its reason, and the list can only shrink.
BENCHMARKS = PACKAGE.parent / "benchmarks"
BENCHMARK_INNER: dict[str, set[str]] = {
    # times the JVP's value and tangent passes by wrapping them where the objective looks them up
    "speed/imf_step.py": {"imf.model.tangent"},
    # swaps the encoder's crop for the per-pixel gather it replaced, to time both in one step
    "speed/image_step.py": {"imf.model.encoder"},
    # the engine's halving rule on a simulated clock, and the uncorrected rule swapped in for comparison;
    # the engine's own work stealing (Starter.steal_for) run on that clock
    "learning/halving_sim.py": {"imf.sweep.halving", "imf.sweep.starter"},
}


def _benchmark_files() -> list[Path]:
    return sorted(BENCHMARKS.rglob("*.py"))


def test_benchmarks_import_only_faces_and_leaves():
    faces = {part: _face_names(part) for part in _folder_parts()}
    bad, used = [], {}
    for path in _benchmark_files():
        where = path.relative_to(BENCHMARKS).as_posix()
        allowed = BENCHMARK_INNER.get(where, set())
        for module in _past_faces(path, "benchmarks"):
            if module in allowed:
                used.setdefault(where, set()).add(module)
            else:
                bad.append(f"benchmarks/{where}: {module}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                target = node.module.removeprefix("imf.")
                if node.module.startswith("imf.") and target in faces:
                    missing = {a.name for a in node.names} - faces[target] - {m.split(".")[2] for m in allowed}
                    if missing:
                        bad.append(f"benchmarks/{where}: {sorted(missing)} not in imf.{target}.__all__")
    assert not bad, "benchmarks/ imports imf only through a part's face (its __init__.py __all__): " + "; ".join(bad)
    assert used == BENCHMARK_INNER, f"BENCHMARK_INNER lists imports no benchmark makes now: shrink it to {used}"
