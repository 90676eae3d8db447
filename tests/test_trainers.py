"""Trainers as plugins (issue 44): the program config's checks, argv, metric reading, and a
third-party trainer through a fake dist-info. Nothing here starts a process (test_trainers_run.py does)."""
from __future__ import annotations

import json
import math

import pytest
import yaml
from imf_process import run_in_process
from plugin_fakes import fake_distribution

from imf import registry
from imf.config.trainer import MetricSpec, load_program_config, trainer_name
from imf.errors import ConfigError
from imf.registry.contracts import check_installed
from imf.train.program import argv_of, read_metric

BASE = {"trainer": "command", "name": "toy",
        "command": ["{python}", "prog.py", "--out", "{out}", "--seed", "{seed}", "{args}"],
        "params": {"model": {"hidden": 64}, "lr": 0.001, "text": "a"},
        "metric": {"name": "loss", "goal": "minimize", "source": "stdout"},
        "init_from": ["--init_from", "{init_from}"]}


def write_config(folder, **changes):
    data = json.loads(json.dumps(BASE))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = folder / "prog.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_config_without_trainer_is_imfs_own(tmp_path):
    assert trainer_name(None) == trainer_name("smoke") == "imf"
    (tmp_path / "plain.yaml").write_text("base: smoke\n")
    assert trainer_name(str(tmp_path / "plain.yaml")) == "imf"
    assert trainer_name(str(write_config(tmp_path))) == "command"
    (tmp_path / "child.yaml").write_text("base: prog.yaml\nparams: {lr: 0.1}\n")
    assert trainer_name(str(tmp_path / "child.yaml")) == "command"
    assert load_program_config(str(tmp_path / "child.yaml"), []).params["lr"] == 0.1


def test_both_built_in_trainers_are_listed_and_keep_the_contract():
    assert {"imf", "command"} <= set(registry.names("imf.trainers"))
    assert check_installed("imf.trainers") == []


@pytest.mark.parametrize("changes, message", [
    ({"command": ["{python}", "prog.py", "{outdir}", "{args}"]}, "command: unknown placeholder {outdir}"),
    ({"metric": {"name": "loss", "source": "stdout"}}, "metric.goal: required for metric 'loss'"),
    ({"metric": {"name": "loss", "goal": "lowest"}}, "metric.goal: expected one of minimize, maximize, got 'lowest'"),
    ({"command": "python prog.py {args}"}, "command: expected a list of words (argv; never a shell line)"),
    ({"command": ["{python}", "prog.py"]}, "add \"{args}\" to command"),
    ({"args": "json"}, "add \"{params_file}\" to command"),
    ({"args": "yaml"}, "args: expected one of hydra, json, env, got 'yaml'"),
    ({"command": ["{python}", "prog.py", "{init_from}", "{args}"]}, "{init_from} belongs in init_from:"),
    ({"budget": {"time_s": -1}}, "budget.time_s: expected seconds > 0, got -1"),
    ({"metric": None}, "metric: required"),
])
def test_a_bad_program_config_is_one_line_naming_the_field(tmp_path, changes, message):
    with pytest.raises(ConfigError) as err:
        load_program_config(str(write_config(tmp_path, **changes)), [])
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("word, message", [
    ("model.width=3", "'model.width' is not under params (keys: model.hidden, lr, text)"),
    ("lr=fast", "expected a finite number like 0.001, got 'fast'"),
    ("model=3", "'model' is a section of params"),
])
def test_an_override_must_set_a_param_of_a_compatible_kind(tmp_path, word, message):
    with pytest.raises(ConfigError, match="override") as err:
        load_program_config(str(write_config(tmp_path)), [word])
    assert message in str(err.value)


def test_overrides_and_json_patch_reach_params(tmp_path):
    cfg = load_program_config(str(write_config(tmp_path)), ["params.lr=0.01", "model.hidden=128", "sweep.name=s"],
                              {"model": {"hidden": 32, "layers": 2}}, seed=7)
    assert cfg.params == {"model": {"hidden": 128, "layers": 2}, "lr": 0.01, "text": "a"}
    assert cfg.seed == 7 and cfg.metric.sign == -1.0 and cfg.workdir == str(tmp_path.resolve())


def test_argv_is_words_with_hydra_params_and_warm_start_words_only_when_warm(tmp_path):
    cfg = load_program_config(str(write_config(tmp_path)), ["text=a;b $(touch x)"])
    values = {"python": "py", "out": "/o", "seed": "3", "params_file": "/o/p.json", "init_from": "/c.pt", "args": ""}
    assert argv_of(cfg, values, warm=False) == ["py", "prog.py", "--out", "/o", "--seed", "3",
                                                "model.hidden=64", "lr=0.001", "text=a;b $(touch x)"]
    assert argv_of(cfg, values, warm=True)[-2:] == ["--init_from", "/c.pt"]


def test_the_metric_from_json_lines_stdout_and_a_json_file(tmp_path):
    lines = tmp_path / "log.jsonl"
    lines.write_text('{"loss": 3}\n{"epoch": 1}\n{"loss": 1}\n{"loss": 2}\n{"loss": ')
    low = MetricSpec("loss", "minimize", str(lines))
    got = read_metric(low, lines, tmp_path / "none.log")
    assert (got.best, got.last, got.count) == (1.0, 2.0, 3)
    assert read_metric(MetricSpec("loss", "maximize", str(lines)), lines, lines).best == 3.0
    assert read_metric(MetricSpec("loss", "minimize", str(lines), "last"), lines, lines).best == 2.0
    log = tmp_path / "program.log"
    log.write_text("epoch 1 loss=0.5\nstep, loss = 0.25\nloss=nan\n")
    assert read_metric(MetricSpec("loss", "minimize", "stdout"), None, log).problem.startswith("non-finite metric")
    log.write_text("val: loss=0.5, acc=1\n")
    assert read_metric(MetricSpec("loss", "minimize", "stdout"), None, log).best == 0.5
    log.write_text("loss=many\n")
    assert read_metric(MetricSpec("loss", "minimize", "stdout"), None, log).problem.startswith("garbage metric")
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"val": {"mean_ratio": 0.8}}))
    assert read_metric(MetricSpec("val.mean_ratio", "minimize", "x"), summary, log).best == 0.8
    assert read_metric(MetricSpec("other", "minimize", "x"), summary, log).problem.startswith("no metric")
    assert read_metric(MetricSpec("loss", "minimize", "x"), tmp_path / "gone.json", log).problem.startswith("no metric")
    assert not math.isnan(read_metric(low, lines, log).best)


@pytest.mark.parametrize("changes, extra, message", [
    ({"command": ["{python}", "prog.py", "{out_dir}", "{args}"]}, [], "unknown placeholder {out_dir}"),
    ({"metric": {"name": "loss", "goal": "max"}}, [], "metric.goal: expected one of minimize, maximize"),
    ({}, ["depth=3"], "'depth' is not under params"),
    ({}, ["--epochs", "3"], "--epochs is imf's own trainer's"),
])
def test_imf_trial_refuses_before_any_run_folder(tmp_path, monkeypatch, capsys, changes, extra, message):
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, **changes)
    code, out, err = run_in_process(monkeypatch, capsys, "trial", str(config), *extra)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("grid, message", [
    ("depth=1,2", "'depth' is not under params"),
    ("lr=0.1,1e-1", "are one value of lr"),
])
def test_imf_sweep_refuses_a_grid_key_not_under_params(tmp_path, monkeypatch, capsys, grid, message):
    config = write_config(tmp_path)
    code, out, err = run_in_process(monkeypatch, capsys, "sweep", str(config), "--grid", grid,
                                    "--out", str(tmp_path / "sw"), "--queue", "local:cpu")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "sw").exists()


def test_imf_sweep_dry_run_plans_the_grid_over_seeds(tmp_path, monkeypatch, capsys):
    config = write_config(tmp_path)
    code, out, err = run_in_process(monkeypatch, capsys, "sweep", str(config), "--grid", "lr=0.1,0.01",
                                    "--seeds", "1,2", "--out", str(tmp_path / "sw"), "--queue", "local:cpu",
                                    "--queue", "local:cpu", "--dry-run")
    assert code in (0, None), err
    for tid in ("toy-lr0.1-s1", "toy-lr0.01-s2"):
        assert tid in out
    assert "lr=0.01" in out and "--epochs" not in out and not (tmp_path / "sw").exists()
    assert "toy-lr0.01-s1 also: params.lr 0.001 -> 0.01" in out


THIRD_PARTY = '''
import json
from pathlib import Path

from imf.store.summary import RunSummary


class ConstantTrainer:
    """Writes a summary with a constant score: a trainer that runs no program at all."""

    def check(self, request):
        if request.dotted:
            from imf.errors import ConfigError
            raise ConfigError(f"constant: takes no key=value words, got {request.dotted[0]!r}")

    def run(self, request):
        out = Path(request.out)
        out.mkdir(parents=True)
        RunSummary(id=request.trial_id or "constant", status="completed", best_score=0.5).write(out)
        return 0
'''


@pytest.fixture
def constant(tmp_path, monkeypatch):
    src = fake_distribution(tmp_path / "src", "imf-constant-trainer", "imf_constant_trainer", THIRD_PARTY,
                            {"imf.trainers": {"constant": "imf_constant_trainer:ConstantTrainer"}})
    monkeypatch.syspath_prepend(str(src))
    yield src
    registry.clear_cache()


def test_a_third_party_trainer_is_listed_checked_and_chosen_by_the_config(constant, tmp_path, monkeypatch, capsys):
    code, out, _ = run_in_process(monkeypatch, capsys, "plugins")
    assert code in (0, None) and "constant         imf-constant-trainer 1.0" in out
    assert check_installed("imf.trainers") == []
    config = tmp_path / "c.yaml"
    config.write_text("trainer: constant\n")
    code, _, err = run_in_process(monkeypatch, capsys, "trial", str(config), "--out", str(tmp_path / "r"))
    assert code in (0, None), err
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["best_score"] == 0.5
    code, _, err = run_in_process(monkeypatch, capsys, "trial", str(config), "x=1", "--out", str(tmp_path / "q"))
    assert code == 2 and "constant: takes no key=value words" in err and not (tmp_path / "q").exists()
    config.write_text("trainer: constnt\n")
    code, _, err = run_in_process(monkeypatch, capsys, "trial", str(config))
    assert code == 2 and "unknown trainer 'constnt' in imf.trainers; installed: command, constant, imf" in err


def test_imf_eval_refuses_a_programs_checkpoint_without_an_eval_command_in_one_line(tmp_path, monkeypatch, capsys):
    run = tmp_path / "runs" / "p1"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(BASE))
    (run / "best.pt").write_bytes(b"not torch")
    code, _, err = run_in_process(monkeypatch, capsys, "eval", str(run / "best.pt"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"trainer 'command' of {run} names no eval command; add eval.command to its config" in err


def test_args_env_passes_params_as_json_and_one_variable_each(tmp_path):
    from imf.train.program import env_of
    cfg = load_program_config(str(write_config(tmp_path, args="env", command=["{python}", "prog.py"])), ["lr=0.5"])
    env = env_of(cfg, 3)
    assert json.loads(env["IMF_PARAMS"]) == {"model": {"hidden": 64}, "lr": 0.5, "text": "a"}
    assert (env["IMF_PARAM_MODEL_HIDDEN"], env["IMF_PARAM_LR"], env["IMF_PARAM_TEXT"], env["IMF_SEED"]) == \
        ("64", "0.5", "a", "3")
    values = {"python": "py", "out": "/o", "seed": "3", "params_file": "/o/p.json", "init_from": "", "args": ""}
    assert argv_of(cfg, values, warm=False) == ["py", "prog.py"]
