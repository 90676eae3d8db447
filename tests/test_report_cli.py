"""`imf report` through the command line, including bad input."""
from __future__ import annotations

import json
import subprocess
import sys

from _report_runs import make_grid_sweep, make_run
from typer.testing import CliRunner

from imf.cli import app

runner = CliRunner()


def _imf(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "imf", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def test_report_prints_tables_and_writes_files(tmp_path):
    sweep = make_grid_sweep(tmp_path)
    result = runner.invoke(app, ["report", str(sweep)])
    assert result.exit_code == 0, result.output
    assert "sw-full-e256-l12-s0" in result.stdout and "width helps: +0.3500" in result.stdout
    assert f"wrote {sweep / 'report.md'}" in result.stdout
    assert (sweep / "heatmap.png").exists()


def test_report_json_and_out(tmp_path):
    sweep = make_grid_sweep(tmp_path)
    result = runner.invoke(app, ["report", str(sweep), "--json", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["trials"][0]["rank"] == 1 and data["trends"]["best_cell"]["n_emb"] == 256
    assert (tmp_path / "o" / "report.csv").exists() and not (sweep / "report.csv").exists()


def test_report_of_several_run_folders_writes_to_their_parent(tmp_path):
    a = make_run(tmp_path / "runs", "a", [0.3])
    b = make_run(tmp_path / "runs", "b", [0.6])
    result = runner.invoke(app, ["report", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "report.md").exists()


def test_missing_folder_is_one_error_line_and_exit_2(tmp_path):
    out = _imf("report", str(tmp_path / "nope"))
    assert out.returncode == 2
    assert out.stderr.splitlines() == [f"imf: error: {tmp_path / 'nope'} does not exist; "
                                       "give a sweep folder or run folders"]


def test_corrupt_scoreboard_is_one_error_line_and_left_alone(tmp_path):
    make_run(tmp_path, "a", [0.5])
    board = tmp_path / "scoreboard.json"
    board.write_text('{"best": null, "trials": [')
    out = _imf("report", str(tmp_path))
    assert out.returncode == 2
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: scoreboard ")
    assert "is corrupt" in lines[0] and str(board) in lines[0]
    assert board.read_text() == '{"best": null, "trials": ['
    assert not (tmp_path / "report.md").exists()
