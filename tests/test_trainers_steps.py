"""A program whose metric comes value after value (a JSON-lines log), run with real processes
(issue 44): ``imf trial --patience`` stops it by its goal, ``imf sweep --halving`` compares its
values at the rungs by its goal, and a sweep takes its metric file's growth for progress."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from imf_process import run_imf

pytestmark = pytest.mark.slow

# loss per value k (1..n): (x - 3)^2 + 1/k for "down"; "dip" improves for 3 values, then worsens
PROGRAM = '''
import json, sys, time
out = sys.argv[sys.argv.index("--out") + 1]
words = dict(w.split("=", 1) for w in sys.argv[1:] if "=" in w)
x, sign, n, pause = float(words["x"]), float(words["sign"]), int(words["n"]), float(words["pause"])
with open(out + "/curve.jsonl", "a") as log:
    for k in range(1, n + 1):
        loss = (5 - k if k <= 3 else k - 1) if words["shape"] == "dip" else (x - 3) ** 2 + 1 / k
        log.write(json.dumps({"step": 10 * k, "loss": sign * loss, "loss_se": 0.01}) + "\\n")
        log.flush()
        time.sleep(pause)
print("done", n)
'''


def config(folder: Path, goal: str = "minimize", sign: float = 1.0, source: str = "{out}/curve.jsonl",
           se: str | None = "loss_se", **params) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "steps.py").write_text(PROGRAM)
    data = {"trainer": "command", "name": "st",
            "command": ["{python}", "steps.py", "--out", "{out}", "{args}"],
            "params": {"x": 0.0, "sign": sign, "n": 12, "pause": 0.25, "shape": "down", **params},
            "metric": {"name": "loss", "goal": goal, "source": source, **({"se": se} if se else {})}}
    path = folder / "st.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("goal, sign", [("minimize", 1.0), ("maximize", -1.0)])
def test_patience_stops_a_program_after_n_values_without_a_new_best_by_its_goal(tmp_path, goal, sign):
    cfg = config(tmp_path / "code", goal, sign, shape="dip")
    done = run_imf("trial", str(cfg), "--patience", "3", "--id", "p", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr
    run = tmp_path / "runs" / "p"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "stopped_early" and summary["reason"].startswith("patience: 3 value(s) of loss")
    assert summary["metric"]["value"] == pytest.approx(2 * sign)  # the best by the goal: loss 2 at k=3
    assert summary["best_score"] == pytest.approx(-2.0)
    written = (run / "curve.jsonl").read_text().splitlines()
    assert 6 <= len(written) < 12  # stopped three values after its best, not run to its end
    rows = [json.loads(line) for line in (run / "logs.json.txt").read_text().splitlines()]
    steps = [r for r in rows if "epoch" in r]
    assert [r["epoch"] for r in steps] == list(range(len(steps))) and steps[2]["imf_score"] == pytest.approx(-2.0)
    assert steps[0] == {"epoch": 0, "loss": 4 * sign, "imf_score": -4.0, "imf_score_se": 0.01}
    board = json.loads((tmp_path / "runs" / "scoreboard.json").read_text())
    assert board["trials"][0]["status"] == "stopped_early" and board["trials"][0]["score"] == pytest.approx(-2.0)


def test_patience_needs_a_metric_that_comes_value_after_value(tmp_path):
    cfg = config(tmp_path / "code", source="{out}/summary.json", se=None)
    for words, message in ((["--patience", "2"], "--patience follows the metric value after value"),
                           (["--patience", "0"], "--patience 0: give 1 or more")):
        done = run_imf("trial", str(cfg), *words, "--id", "p", cwd=tmp_path)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def _halving_sweep(project: Path, goal: str, sign: float) -> dict:
    cfg = config(project / "code", goal, sign)
    done = run_imf("sweep", str(cfg), "--grid", "x=0,1,3,4", "--halving", "2", "--rungs", "2",
                   "--queue", "local:cpu", "--queue", "local:cpu", "--out", str(project), "--name", "h",
                   "--poll", "0.2", cwd=project, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    return json.loads((project / "h" / "sweep.json").read_text())


def test_halving_compares_a_programs_values_at_the_rungs_by_its_goal(tmp_path):
    low = _halving_sweep(tmp_path / "low", "minimize", 1.0)
    states = {t["id"]: t["state"] for t in low["trials"]}
    assert states["h-x3-s0"] == "completed" and states["h-x0-s0"] == "stopped_early", states
    scores = {s["trial"]: s["score"] for s in low["halving"]["scores"]}
    assert scores["h-x3-s0"] == pytest.approx(-0.5) and scores["h-x0-s0"] == pytest.approx(-9.5)
    for d in low["halving"]["decisions"]:  # imf's score is higher-is-better: -loss
        assert (d["outcome"] == "stopped") == (scores[d["trial"]] < d["cut"] - 0.1), d
    summary = json.loads((tmp_path / "low" / "h" / "h-x0-s0" / "summary.json").read_text())
    assert summary["status"] == "stopped_early" and "halving at epoch 2" in summary["note"]
    high = _halving_sweep(tmp_path / "high", "maximize", -1.0)
    assert {t["id"]: t["state"] for t in high["trials"]} == states
    assert {s["trial"]: s["score"] for s in high["halving"]["scores"]} == scores


def test_halving_needs_a_metric_that_comes_value_after_value(tmp_path):
    cfg = config(tmp_path / "code", source="{out}/summary.json", se=None)
    done = run_imf("sweep", str(cfg), "--grid", "x=0,1", "--halving", "2", "--rungs", "2", "--queue", "local:cpu",
                   "--out", str(tmp_path / "p"), cwd=tmp_path)
    assert done.returncode == 2 and "halving compares the metric's K-th value" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "p").exists()


def test_a_sweep_takes_the_growth_of_a_programs_metric_file_for_progress(tmp_path):
    """The program prints nothing for 6 s, but its JSON-lines log grows every 0.6 s: not a stall."""
    cfg = config(tmp_path / "code", se=None, n=10, pause=0.6)
    done = run_imf("sweep", str(cfg), "--grid", "x=1", "--stall-timeout", "2.5", "--retries", "0",
                   "--queue", "local:cpu", "--out", str(tmp_path / "p"), "--name", "s", "--poll", "0.2",
                   cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    (trial,) = json.loads((tmp_path / "p" / "s" / "sweep.json").read_text())["trials"]
    assert trial["state"] == "completed" and trial["epoch"] == 10, trial
