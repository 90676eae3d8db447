"""`imf log hypothesis` and `imf log conclude` through the command line."""
from __future__ import annotations


import pytest

from typer.testing import CliRunner

from imf.cli import app
from imf.store.iteration_log import IterationLogStore
from imf_process import run_imf

runner = CliRunner()


def test_hypothesis_then_conclude(tmp_path):
    args = ["log", "hypothesis", "--text", "wider helps", "--expect", "+0.05", "--dir", str(tmp_path)]
    first = runner.invoke(app, args + ["--command", "imf sweep --grid 128,256x6"])
    second = runner.invoke(app, args)
    assert (first.exit_code, first.stdout, second.stdout) == (0, "H1\n", "H2\n")
    done = runner.invoke(app, ["log", "conclude", "H1", "--result", "+0.07", "--conclusion",
                               "holds", "--dir", str(tmp_path)])
    assert done.exit_code == 0 and done.stdout == "concluded H1\n"
    blocks = IterationLogStore(tmp_path).hypotheses()
    assert blocks[0]["command"] == "imf sweep --grid 128,256x6"
    assert (blocks[0]["result"], blocks[0]["conclusion"]) == ("+0.07", "holds")
    assert blocks[1]["result"] is None


def test_missing_required_option_is_a_usage_error(tmp_path):
    result = runner.invoke(app, ["log", "hypothesis", "--text", "x", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "--expect" in result.output


@pytest.mark.slow
def test_bad_input_is_one_error_line_and_exit_2(tmp_path):
    missing = run_imf("log", "hypothesis", "--text", "t", "--expect", "e", "--dir", str(tmp_path / "no"))
    assert (missing.returncode, missing.stderr) == (
        2, f"imf: error: --dir {tmp_path / 'no'} is not an existing folder\n")
    no_log = run_imf("log", "conclude", "H1", "--result", "r", "--conclusion", "c", "--dir", str(tmp_path))
    assert no_log.returncode == 2 and no_log.stderr.startswith(
        f"imf: error: no ITERATION_LOG.md in {tmp_path}")
    IterationLogStore(tmp_path).add_hypothesis("t", "e")
    unknown = run_imf("log", "conclude", "H7", "--result", "r", "--conclusion", "c", "--dir", str(tmp_path))
    assert unknown.returncode == 2
    assert unknown.stderr.splitlines() == [
        f"imf: error: no hypothesis H7 in {tmp_path / 'ITERATION_LOG.md'}; ids: H1"]
