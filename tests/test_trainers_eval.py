"""A program's checkpoint scored by its own eval command (issue 44): ``imf eval CKPT``, ``imf eval
--best DIR`` and a program trial's ``--final-eval``, with real processes (the example trainer)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from imf_process import run_imf

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trainers"


def toy(tmp_path: Path, **changes) -> Path:
    """The example's toy.yaml in a copy of its folder, with ``changes`` (None drops a key)."""
    code = tmp_path / "code"
    if not code.exists():
        shutil.copytree(EXAMPLE, code)
    data = yaml.safe_load((code / "toy.yaml").read_text())
    data["params"]["optim"]["steps"] = 100
    for key, value in changes.items():
        data.pop(key) if value is None else data.__setitem__(key, value)
    path = code / f"toy{len(changes)}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def trial(tmp_path: Path, config: Path, tid: str, *words: str) -> Path:
    done = run_imf("trial", str(config), "--seed", "1", "--id", tid, *words, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr
    return tmp_path / "runs" / tid


def test_imf_eval_runs_the_programs_eval_command_on_a_checkpoint_and_on_the_best(tmp_path):
    run = trial(tmp_path, toy(tmp_path), "a")
    done = run_imf("eval", str(run / "best.pt"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    written = json.loads((run / "eval" / "eval.json").read_text())
    assert written["n"] == 512 and result["metric"] == {"name": "val_mse", "goal": "minimize", "value": written["val_mse"]}
    assert result["score"] == -written["val_mse"] and result["trial"] == "a"
    best = run_imf("eval", "--best", str(tmp_path / "runs"), cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    assert f"checkpoint {run / 'best.pt'} (trial a): val_mse {written['val_mse']:g} (minimize; score" in best.stdout
    flag = run_imf("eval", str(run / "best.pt"), "--n-test", "5", cwd=tmp_path)
    assert flag.returncode == 2 and "drop --n-test" in flag.stderr and len(flag.stderr.strip().splitlines()) == 1


def test_imf_eval_of_a_program_without_an_eval_command_is_refused_in_one_line(tmp_path):
    run = trial(tmp_path, toy(tmp_path, eval=None), "a")
    for args in (["--best", str(tmp_path / "runs")], [str(run / "best.pt")]):
        done = run_imf("eval", *args, cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.strip().splitlines() == [
            f"imf: error: trainer 'command' of {run} names no eval command; add eval.command to its config"]
    assert not (run / "eval").exists()


def test_an_eval_command_that_fails_is_exit_1_with_its_logs_tail(tmp_path):
    broken = {"command": ["{python}", "-c", "import sys; print('no model here'); sys.exit(3)", "{checkpoint}"],
              "metric": {"name": "val_mse"}}
    run = trial(tmp_path, toy(tmp_path, eval=broken), "a")
    done = run_imf("eval", str(run / "best.pt"), cwd=tmp_path)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "failed: exit code 3" in line and "no model here" in line
