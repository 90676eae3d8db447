"""`imf report` through the command line, including bad input."""
from __future__ import annotations

import json

import pytest
from _report_runs import make_grid_sweep, make_run
from typer.testing import CliRunner

from imf.cli import app
from imf_process import run_imf

runner = CliRunner()


def test_report_prints_tables_and_writes_files(tmp_path, monkeypatch):
    sweep = make_grid_sweep(tmp_path)
    (sweep / "sweep.json").write_text(json.dumps({"trials": []}))  # an imf sweep: files go there
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["report", str(sweep)])
    assert result.exit_code == 0, result.output
    assert "sw-full-e256-l12-s0" in result.stdout and "width helps: +0.3500" in result.stdout
    assert f"wrote {sweep / 'report.md'}" in result.stdout
    assert (sweep / "heatmap.png").exists() and (sweep / "curves.png").exists()
    assert not (tmp_path / "report.md").exists()


def test_report_json_and_out(tmp_path):
    sweep = make_grid_sweep(tmp_path)
    result = runner.invoke(app, ["report", str(sweep), "--json", "--out", str(tmp_path / "o"),
                                 "--last-k", "2"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["trials"][0]["rank"] == 1 and data["trends"]["best_cell"]["n_emb"] == 256
    assert data["last_k"] == 2 and data["trials"][2]["last_k"] == 0.575  # 0.60, 0.55
    assert (tmp_path / "o" / "report.csv").exists() and not (sweep / "report.csv").exists()


@pytest.mark.slow  # starts imf as a process
def test_without_out_nobody_elses_run_folder_is_written(tmp_path):
    """Run folders: nothing is written without --out; a folder of runs gets its own report;
    the current folder, not named, gets nothing."""
    a = make_run(tmp_path / "runs", "a", [0.3])
    b = make_run(tmp_path / "runs", "b", [0.6])
    here = tmp_path / "here"
    here.mkdir()
    for args, why in (([str(a), str(b)], "2 folders given"), ([str(a)], f"{a} is a run folder")):
        out = run_imf("report", *args, cwd=here)
        assert out.returncode == 0, out.stderr
        assert f"imf: note: report files not written: {why}; give --out FOLDER to write them" in out.stderr
    assert not (a / "report.md").exists() and not (tmp_path / "runs" / "report.md").exists()
    out = run_imf("report", str(tmp_path / "runs"), cwd=here)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "runs" / "report.md").exists() and not (a / "report.md").exists()
    assert list(here.iterdir()) == []


@pytest.mark.slow  # starts imf as a process
def test_inside_a_run_folder_nothing_is_written_without_out(tmp_path):
    run = make_run(tmp_path, "r", [0.3])
    before = sorted(p.name for p in run.iterdir())
    out = run_imf("report", cwd=run)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[3].split()[:3] == ["1", "r", "completed"]
    assert out.stderr.splitlines() == ["imf: note: report files not written: the current folder "
                                       "is a run folder; give --out FOLDER to write them"]
    assert sorted(p.name for p in run.iterdir()) == before


@pytest.mark.slow  # starts imf as a process
def test_bad_last_k_is_one_line(tmp_path):
    out = run_imf("report", str(make_grid_sweep(tmp_path)), "--last-k", "0", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.splitlines() == ["imf: error: --last-k 0: give 1 or more rollouts to average"]


@pytest.mark.slow  # starts imf as a process
def test_missing_folder_is_one_error_line_and_exit_2(tmp_path):
    out = run_imf("report", str(tmp_path / "nope"))
    assert out.returncode == 2
    assert out.stderr.splitlines() == [f"imf: error: {tmp_path / 'nope'} does not exist; "
                                       "give a sweep folder or run folders"]


@pytest.mark.slow  # starts imf as a process
def test_corrupt_scoreboard_is_one_error_line_and_left_alone(tmp_path):
    make_run(tmp_path, "a", [0.5])
    board = tmp_path / "scoreboard.json"
    board.write_text('{"best": null, "trials": [')
    out = run_imf("report", str(tmp_path))
    assert out.returncode == 2
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: scoreboard ")
    assert "is corrupt" in lines[0] and str(board) in lines[0]
    assert board.read_text() == '{"best": null, "trials": ['
    assert not (tmp_path / "report.md").exists()
