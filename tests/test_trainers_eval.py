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


def test_final_eval_of_a_program_trial_runs_its_eval_command_into_final_eval_json(tmp_path):
    run = trial(tmp_path, toy(tmp_path), "f", "--final-eval", "1")
    written = json.loads((run / "eval" / "eval.json").read_text())
    final = json.loads((run / "final_eval.json").read_text())
    assert final["mean"] == -written["val_mse"] and final["checkpoint"] == "best.pt"
    assert final["metric"] == {"name": "val_mse", "goal": "minimize", "value": written["val_mse"]}
    report = json.loads(run_imf("report", str(tmp_path / "runs"), "--json", cwd=tmp_path).stdout)
    assert report["trials"][0]["selection"] == final["mean"]
    bare = toy(tmp_path, eval=None)
    done = run_imf("trial", str(bare), "--final-eval", "1", "--id", "g", cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "runs" / "g").exists()
    assert done.stderr.strip().splitlines() == [f"imf: error: --final-eval: trainer 'command' of {bare} names no "
                                                "eval command; add eval.command to its config"]


def test_resume_runs_the_program_again_in_its_folder_from_the_checkpoint_it_wrote(tmp_path):
    run = trial(tmp_path, toy(tmp_path), "a")
    first = json.loads((run / "summary.json").read_text())
    done = run_imf("trial", "--resume", "--out", str(run), "--final-eval", "1", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr
    assert f"resuming in {run} from {run / 'best.pt'}" in done.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["resumes"] == 1 and summary["resumed_from"] == str(run / "best.pt")
    for key in ("id", "config_hash", "cell", "run_uid", "seed"):
        assert summary[key] == first[key], key
    lines = [json.loads(line)["val_mse"] for line in (run / "log.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and lines[2] < lines[0]  # the second run went on from the first one's weights
    assert (run / "final_eval.json").is_file()
    board = json.loads((tmp_path / "runs" / "scoreboard.json").read_text())
    (entry,) = board["trials"]  # the same attempt (its run_uid) continued: its record updated
    assert entry["id"] == "a" and entry["score"] == summary["best_score"] == -min(lines[2:])


def test_resume_of_a_program_that_cannot_continue_is_refused_in_one_line(tmp_path):
    run = trial(tmp_path, toy(tmp_path, init_from=None), "a")
    before = (run / "summary.json").read_text()
    done = run_imf("trial", "--resume", "--out", str(run), cwd=tmp_path)
    assert done.returncode == 2 and (run / "summary.json").read_text() == before
    assert done.stderr.strip().splitlines() == [
        f"imf: error: --resume: trainer 'command' of {run} cannot resume: its config names no checkpoint: and "
        "init_from: words to continue from; run the trial again instead"]
    again = run_imf("trial", "--resume", "--out", str(run), "optim.lr=0.1", cwd=tmp_path)
    assert again.returncode == 2 and "drop key=value overrides" in again.stderr


def test_a_program_sweeps_final_eval_runs_each_trials_eval_command(tmp_path):
    config = toy(tmp_path)
    done = run_imf("sweep", str(config), "--grid", "optim.lr=0.1", "--final-eval", "1", "--queue", "local:cpu",
                   "--out", str(tmp_path / "p"), "--name", "fe", "--poll", "0.3", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    final = json.loads((tmp_path / "p" / "fe" / "fe-lr0.1-s0" / "final_eval.json").read_text())
    assert final["metric"]["name"] == "val_mse" and final["mean"] == -final["metric"]["value"]
    bare = toy(tmp_path, eval=None)
    refused = run_imf("sweep", str(bare), "--grid", "optim.lr=0.1", "--final-eval", "1", "--queue", "local:cpu",
                      "--out", str(tmp_path / "q"), cwd=tmp_path)
    assert refused.returncode == 2 and "names no eval command" in refused.stderr and not (tmp_path / "q").exists()
