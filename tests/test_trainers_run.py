"""A program run as imf trials and sweeps with real processes (issue 44): what it records, how it
can fail, that params never pass through a shell, that the goal holds in ranking and suggestions,
and the example trainer's two-queue sweep, report and loop."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from imf_process import run_imf

from imf.store.iteration_log import IterationLogStore

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trainers"
PROGRAM = '''
import json, sys, time
out = sys.argv[sys.argv.index("--out") + 1]
seed = int(sys.argv[sys.argv.index("--seed") + 1])
words = dict(w.split("=", 1) for w in sys.argv[1:] if "=" in w)
json.dump(sys.argv, open(out + "/argv.json", "w"))
mode, x, sign = words["mode"], float(words["x"]), float(words["sign"])
print("starting", mode)
if mode == "fail":
    print("boom: the data is missing")
    sys.exit(4)
if mode == "hang":
    time.sleep(120)
if mode == "nan":
    print("loss=nan")
elif mode == "garbage":
    print("loss=lots")
elif mode == "ok":
    print(f"loss={sign * ((x - 3.2) ** 2 + 0.01 * seed)}")
    with open(out + "/m.jsonl", "w") as log:  # the same value with its noise, for metric.se
        log.write(json.dumps({"loss": sign * ((x - 3.2) ** 2 + 0.01 * seed), "loss_se": 0.05}) + "\\n")
'''


def program_config(folder: Path, goal: str = "minimize", sign: float = 1.0, **extra) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prog.py").write_text(PROGRAM)
    data = {"trainer": "command", "name": "prog",
            "command": ["{python}", "prog.py", "--out", "{out}", "--seed", "{seed}", "{args}"],
            "params": {"x": 0.0, "mode": "ok", "sign": sign, "text": ""},
            "metric": {"name": "loss", "goal": goal, "source": "stdout"}, **extra}
    path = folder / "prog.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_program_trial_records_what_imfs_trials_record(tmp_path):
    config = program_config(tmp_path / "code")
    done = run_imf("trial", str(config), "x=1", "--seed", "7", "--note", "first", "--id", "p1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "runs" / "p1" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["seed"] == 7 and summary["note"] == "first"
    assert summary["metric"] == {"name": "loss", "goal": "minimize", "value": pytest.approx(4.91), "last": pytest.approx(4.91)}
    assert summary["best_score"] == pytest.approx(-4.91)  # imf's scores: higher is better
    assert summary["overrides"] == ["x=1"] and summary["params"]["x"] == 1.0
    for key in ("config_hash", "cell", "run_uid", "code_version", "started", "finished"):
        assert summary[key], key
    board = json.loads((tmp_path / "runs" / "scoreboard.json").read_text())
    assert board["best"]["trial"] == "p1" and board["trials"][0]["config_hash"] == summary["config_hash"]
    assert "trial `p1`" in (tmp_path / "runs" / "ITERATION_LOG.md").read_text()
    again = run_imf("trial", str(config), "x=2", "--seed", "7", "--id", "p1", cwd=tmp_path)
    assert again.returncode == 2 and "another config" in again.stderr  # an id names one config


@pytest.mark.parametrize("words, status, code, message", [
    (["mode=fail"], "failed", 1, "program failed: exit code 4; program.log ends: starting fail | boom: the data is missing"),
    (["mode=none"], "failed", 1, "no metric: loss not found in program.log (stdout)"),
    (["mode=garbage"], "failed", 1, "garbage metric: loss = 'lots'"),
    (["mode=nan"], "diverged", 3, "non-finite metric: loss = nan"),
    (["mode=hang"], "failed", 1, "over budget: ran past budget.time_s 2 s and was stopped"),
])
def test_a_program_that_fails_is_a_named_outcome_never_a_success(tmp_path, words, status, code, message):
    config = program_config(tmp_path / "code", budget={"time_s": 2})
    done = run_imf("trial", str(config), *words, "--id", "bad", cwd=tmp_path, timeout=300)
    assert done.returncode == code
    line = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(line) == 1 and message in line[0] and line[0].startswith(f"imf: trial bad {status}: ")
    summary = json.loads((tmp_path / "runs" / "bad" / "summary.json").read_text())
    assert summary["status"] == status and message in summary["reason"]
    entry = json.loads((tmp_path / "runs" / "scoreboard.json").read_text())["trials"][0]
    assert entry["status"] == status and entry["score"] is None


def test_params_never_pass_through_a_shell(tmp_path):
    config = program_config(tmp_path / "code")
    text = "a;touch pwned; $(touch pwned2) `touch pwned3` | cat > pwned4"
    done = run_imf("trial", str(config), f"text={text}", "--id", "quoted", "--store", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    argv = json.loads((tmp_path / "runs" / "quoted" / "argv.json").read_text())
    assert f"text={text}" in argv
    for folder in (tmp_path, tmp_path / "code", tmp_path / "runs" / "quoted"):
        assert not any(p.name.startswith("pwned") for p in folder.iterdir())


def test_json_params_and_a_warm_start_reach_the_example_trainer(tmp_path):
    config = EXAMPLE / "toy.yaml"
    first = run_imf("trial", str(config), "optim.steps=100", "--seed", "3", "--id", "a", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    best = tmp_path / "runs" / "a" / "best.pt"
    warm = run_imf("trial", str(config), "optim.steps=100", "--seed", "3", "--id", "b", "--init-from", str(best),
                   "--overrides", '{"model": {"scale": 2.0}}', cwd=tmp_path)
    assert warm.returncode == 0, warm.stderr
    params = json.loads((tmp_path / "runs" / "b" / "params.json").read_text())
    assert params["model"] == {"features": 16, "scale": 2.0} and params["optim"]["steps"] == 100
    summary = json.loads((tmp_path / "runs" / "b" / "summary.json").read_text())
    assert summary["warm_started"] and summary["init_hash"] and summary["checkpoints"]["best"] == "best.pt"
    assert summary["cell"] != json.loads((tmp_path / "runs" / "a" / "summary.json").read_text())["cell"]


def _sweep(project: Path, config: Path) -> None:
    done = run_imf("sweep", str(config), "--grid", "x=1,2,4", "--seeds", "1,2", "--queue", "local:cpu",
                   "--queue", "local:cpu", "--out", str(project), "--name", "g", "--poll", "0.3", cwd=project)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr


def test_the_goal_holds_one_grid_with_its_metric_negated_and_goal_flipped_ranks_suggests_and_loops_alike(tmp_path):
    """Both sides decide alike (rank, proposals, verdicts, the best, gains' sizes); each prints its
    metric as written, so the goal-minimize side shows positive losses, never imf's negated score."""
    low, high = tmp_path / "low", tmp_path / "high"
    for project, goal, sign in ((low, "minimize", 1.0), (high, "maximize", -1.0)):  # each run's noise known
        metric = {"name": "loss", "goal": goal, "source": "{out}/m.jsonl", "se": "loss_se"}
        _sweep(project, program_config(project / "code", goal, sign, metric=metric))
    ranked = []
    for project in (low, high):
        report = run_imf("report", str(project / "g"), "--json", cwd=project)
        assert report.returncode == 0, report.stderr
        ranked.append([row["id"] for row in json.loads(report.stdout)["trials"]])
    assert ranked[0] == ranked[1] and ranked[0][:3] == ["g-x4-s1", "g-x4-s2", "g-x2-s1"]
    suggestions, reasons = [], []
    for project in (low, high):
        done = run_imf("suggest", str(project / "g"), "--json", cwd=project)
        assert done.returncode == 0, done.stderr
        proposals = json.loads(done.stdout)
        suggestions.append([(p["kind"], p["id"], p["changes"], p["seed"], p["command"].replace(str(project), "P"))
                            for p in proposals])
        reasons.append([p["reason"] for p in proposals])
    assert suggestions[0] == suggestions[1] and suggestions[0]
    assert [_magnitudes(r) for r in reasons[0]] == [_magnitudes(r) for r in reasons[1]]
    _speaks_the_loss(reasons[0])
    assert any("(loss 0.6" in r and " ± " in r for r in reasons[0]), reasons[0]  # the best cell g-x4: loss 0.65
    assert any("(loss -0.6" in r for r in reasons[1]), reasons[1]  # maximize: -loss as the program wrote it
    boards = [json.loads((p / "g" / "scoreboard.json").read_text())["best"]["trial"] for p in (low, high)]
    assert boards == ["g-x4-s1", "g-x4-s1"]
    decisions = [_loop_decisions(project) for project in (low, high)]
    texts = [d.pop("log") for d in decisions]
    terms = [{k: d["best_after"].pop(k) for k in ("metric", "goal")} for d in decisions]
    assert terms == [{"metric": "loss", "goal": "minimize"}, {"metric": "loss", "goal": "maximize"}]
    assert decisions[0] == decisions[1]
    verdicts = [v for _, v, _ in decisions[0]["outcomes"]]
    assert verdicts and len(verdicts) == len(decisions[0]["proposals"]), decisions[0]
    assert set(verdicts) <= {"better", "worse", "no clear difference"} and {"better", "worse"} & set(verdicts), verdicts
    for side in texts:
        (block,) = side
        assert all(f"{tid}: {verdict}" in block["conclusion"] for tid, verdict, _ in decisions[0]["outcomes"])
    (lows,), (highs,) = texts
    for key in ("hypothesis", "expectation", "result", "conclusion"):
        assert _magnitudes(lows[key]) == _magnitudes(highs[key]), key
    _speaks_the_loss([lows[key] for key in ("hypothesis", "expectation", "result", "conclusion")])
    assert "a gain is a loss below the best's" in lows["expectation"], lows["expectation"]
    assert "a gain is a loss above the best's" in highs["expectation"], highs["expectation"]
    assert "the best stays g-x4 loss 0.6" in lows["conclusion"] or "the best is now" in lows["conclusion"], lows
    worse = [tid for tid, verdict, _ in decisions[0]["outcomes"] if verdict == "worse"]
    assert all(re.search(rf"{tid}: loss [0-9.]+ ± [0-9.]+ \(completed\); loss [0-9.]+ ± [0-9.]+ higher", lows["result"])
               for tid in worse), lows["result"]


def _magnitudes(text: str) -> list[str]:
    """A text's numbers without their signs, in order of size: a goal's two sides print the same
    sizes (a range's ends swap with the sign)."""
    return sorted(re.findall(r"\d+\.\d+", text))


def _speaks_the_loss(texts: list[str]) -> None:
    """The goal-minimize side prints its loss as the program wrote it (positive), never negated."""
    joined = "\n".join(texts)
    assert "loss " in joined and "-0.0" not in joined and not re.search(r"loss -\d", joined), joined
    assert not re.search(r"(?<![\w.])-\d+\.\d", joined), joined


def _loop_decisions(project: Path) -> dict:
    """One ``imf loop`` round on the grid: its hypotheses, each run's verdict and difference against
    the best before (imf's higher-is-better score), and the conclusions it wrote."""
    done = run_imf("loop", str(project / "g"), "--rounds", "1", "--queue", "local:cpu", "--queue", "local:cpu",
                   cwd=project)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    state = json.loads((project / "g" / "loop.json").read_text())
    (only,) = state["rounds"]
    blocks = [{key: str(value).replace(str(project), "P") for key, value in block.items() if key != "time"}
              for block in IterationLogStore(project / "g").hypotheses()]
    return {"proposals": [(p["id"], p["kind"], p["overrides"], p["seed"]) for p in only["proposals"]],
            "outcomes": [(o["id"], o["verdict"], round(o["diff"], 9)) for o in only["outcomes"]],
            "gain": only["gain"], "best_after": only["best_after"], "log": blocks}


def test_the_example_trainer_two_queue_sweep_report_and_a_loop_round(tmp_path):
    code = tmp_path / "code"
    shutil.copytree(EXAMPLE, code)
    done = run_imf("sweep", str(code / "toy.yaml"), "--grid", "model.features=8,32", "--grid", "optim.lr=0.02,0.1",
                   "--seeds", "1,2", "--queue", "local:cpu", "--queue", "local:cpu", "--out", str(tmp_path / "p"),
                   "--poll", "0.3", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    sweep = json.loads((tmp_path / "p" / "toy" / "sweep.json").read_text())
    assert {t["queue"] for t in sweep["trials"]} == {q["name"] for q in sweep["queues"]} and len(sweep["queues"]) == 2
    assert all(t["state"] == "completed" and t["recorded"] for t in sweep["trials"]), sweep["trials"]
    report = json.loads(run_imf("report", str(tmp_path / "p" / "toy"), "--json", cwd=tmp_path).stdout)
    scores = [row["best_score"] for row in report["trials"]]
    assert len(scores) == 8 and scores == sorted(scores, reverse=True) and all(s < 0 for s in scores)
    assert report["ranked_by"]["name"] == "max -val_mse" and "score = -val_mse" in " ".join(report["notices"])
    loop = run_imf("loop", str(tmp_path / "p" / "toy"), "--rounds", "1", "--queue", "local:cpu",
                   "--queue", "local:cpu", cwd=tmp_path)
    assert loop.returncode == 0, loop.stdout[-2000:] + loop.stderr
    assert "loop finished: 1 round(s) done" in loop.stdout
    board = json.loads((tmp_path / "p" / "toy" / "scoreboard.json").read_text())
    assert len(board["trials"]) > 8 and board["best"]["value"] == max(t["score"] for t in board["trials"]
                                                                         if t["score"] is not None)


def test_a_diffusion_policy_shaped_program_is_read_by_the_report_as_dp_runs_are(tmp_path):
    code = tmp_path / "code"
    shutil.copytree(EXAMPLE, code)
    done = run_imf("sweep", str(code / "dp_shaped.yaml"), "--grid", "optimizer.lr=1e-4,3e-4", "--queue", "local:cpu",
                   "--out", str(tmp_path / "p"), "--poll", "0.3", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    argv = (tmp_path / "p" / "dp" / "dp-lr3e-4-s0" / "program.log").read_text()
    assert "done: 8 epochs" in argv
    report = json.loads(run_imf("report", str(tmp_path / "p" / "dp"), "--json", cwd=tmp_path).stdout)
    top = report["trials"][0]
    assert top["id"] == "dp-lr3e-4-s0" and top["final_epoch"] == 8 and top["best_epoch"] in (2, 4, 6, 8)
    rows = [json.loads(line) for line in (tmp_path / "p" / "dp" / top["id"] / "logs.json.txt").read_text().splitlines()]
    assert top["best_score"] == max(r["test_mean_score"] for r in rows if "test_mean_score" in r)
    summary = json.loads((tmp_path / "p" / "dp" / top["id"] / "summary.json").read_text())
    assert summary["metric"]["goal"] == "maximize" and summary["best_score"] == top["best_score"]
    assert summary["checkpoints"]["best"] == "checkpoints/latest.ckpt"
