"""`imf report` writes into the folder it is given (or --out), never into the current folder it
was not given, and never over a user's own report.md there (issue #41)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from _report_runs import make_grid_sweep, make_run
from typer.testing import CliRunner

from imf.cli import app

runner = CliRunner()
REPORT_FILES = {"report.md", "report.json", "report.csv", "heatmap.png", "curves.png"}
REPORT_TEXT = {"report.md", "report.json", "report.csv"}  # the PNGs: with matplotlib, and a grid
COMPARE_FILES = {"compare.md", "compare.json", "compare.csv", "compare_heatmap.png"}
COMPARE_TEXT = {"compare.md", "compare.json", "compare.csv"}
GENERATED = REPORT_FILES | COMPARE_FILES


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """The current folder: it holds the user's own report.md, and must stay as it is."""
    cwd = tmp_path / "here"
    cwd.mkdir()
    (cwd / "report.md").write_text("# my own notes\n")
    monkeypatch.chdir(cwd)
    return cwd


def _sweep(root: Path, ours: bool = True) -> Path:
    sweep = make_grid_sweep(root)
    if ours:
        (sweep / "sweep.json").write_text(json.dumps({"trials": []}))
    return sweep


def _report(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["report", *args])
    if result.exit_code not in (0, 2):
        raise result.exception
    return result.exit_code, result.output


def _written(folder: Path, before: dict[str, bytes]) -> set[str]:
    after = _snapshot(folder)
    return {name for name in after if before.get(name) != after[name]}


def test_one_sweep_folder_gets_the_files_and_the_current_folder_is_untouched(here, tmp_path):
    before = _snapshot(here)
    for sweep in (_sweep(tmp_path / "a"), _sweep(tmp_path / "b", ours=False)):  # imf's, or any folder of runs
        code, output = _report(str(sweep))
        assert code == 0, output
        assert REPORT_TEXT <= {p.name for p in sweep.iterdir()}, output
    assert _snapshot(here) == before


def test_compare_writes_into_the_second_sweep_only(here, tmp_path):
    a, b = _sweep(tmp_path / "a"), _sweep(tmp_path / "b")
    before, before_a = _snapshot(here), _snapshot(a)
    code, output = _report(str(a), str(b))
    assert code == 0, output
    assert _snapshot(here) == before and _snapshot(a) == before_a
    assert COMPARE_TEXT <= {p.name for p in b.iterdir()}
    assert f"wrote {b / 'compare.md'}" in output


def test_run_folders_and_several_folders_write_nothing_without_out(here, tmp_path):
    r1 = make_run(tmp_path / "runs", "r1", [0.3])
    r2 = make_run(tmp_path / "runs", "r2", [0.5])
    a, b = _sweep(tmp_path / "a"), _sweep(tmp_path / "b")
    everything = [here, tmp_path / "runs", a, b]
    before = {folder: _snapshot(folder) for folder in everything}
    for args, why in (([str(r1)], f"{r1} is a run folder"), ([str(r1), str(r2)], "2 folders given"),
                      ([str(a), str(b), "--no-compare"], "2 folders given")):
        code, output = _report(*args)
        assert code == 0, output
        assert f"imf: note: report files not written: {why}; give --out FOLDER to write them" in output
        assert "wrote " not in output
    assert {folder: _snapshot(folder) for folder in everything} == before


def test_out_is_where_the_files_go(here, tmp_path):
    a, b = _sweep(tmp_path / "a"), _sweep(tmp_path / "b")
    before = _snapshot(here)
    code, output = _report(str(a), "--out", str(tmp_path / "o1"))
    assert code == 0, output
    code, output = _report(str(a), str(b), "--out", str(tmp_path / "o2"))
    assert code == 0, output
    assert REPORT_TEXT <= {p.name for p in (tmp_path / "o1").iterdir()}
    assert COMPARE_TEXT <= {p.name for p in (tmp_path / "o2").iterdir()}
    assert not GENERATED & {p.name for p in b.iterdir()}
    assert _snapshot(here) == before


def test_the_current_folder_gets_the_files_when_it_is_the_folder_named(here, tmp_path):
    runs = here / "runs"
    make_run(runs, "r1", [0.3])
    make_run(runs, "r2", [0.5])
    code, output = _report()  # the default: the current folder, a folder of runs
    assert code == 0, output
    assert (here / "report.md").read_text() != "# my own notes\n"
    assert REPORT_TEXT <= {p.name for p in here.iterdir()}


def test_the_repository_root_holds_no_generated_report_files():
    root = Path(__file__).resolve().parent.parent
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", *sorted(GENERATED)], cwd=root, capture_output=True,
                             text=True, check=True).stdout.split()
    assert tracked == [], f"generated report files committed at the repository root: {tracked}"
