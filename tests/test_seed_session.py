"""A scripted first session (examples/seed_session.py: 12+ trials, a warm-start chain, a diverged
trial, two at once, a loop of two rounds, the best re-scored, an ensemble) ends with one
scoreboard whose every record matches its run folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from imf.store.iteration_log import IterationLogStore
from imf.store.runs import find_run_dirs
from imf.store.scoreboard import ScoreboardStore

pytestmark = pytest.mark.slow  # about 2 minutes of tiny trials

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "seed_session.py"


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("session")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SWANLAB_MODE": "offline", "IMF_CACHE": str(root / "cache")}
    out = subprocess.run([sys.executable, str(SCRIPT), "runs/s1", "--tiny"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return root / "runs" / "s1", out.stdout


def test_every_record_matches_its_run_folder_and_every_run_folder_has_one_record(session):
    project, _ = session
    records = ScoreboardStore(project).read()
    trials = [r for r in records if r.get("kind") != "ensemble"]
    assert len(trials) >= 12
    for record in trials:
        run = Path(record["run_dir"])
        summary = json.loads((run / "summary.json").read_text())
        assert (summary["id"], summary["status"], summary["seed"]) == \
            (record["id"], record["status"], record["seed"]), run
        assert (summary["config_hash"], summary["cell"], summary["run_uid"], summary.get("init_from")) == \
            (record["config_hash"], record["cell"], record["run_uid"], record["init_from"]), run
        assert record["score"] == summary["best_score"] or record["status"] == "diverged"
        if record["checkpoint"]:
            assert Path(record["checkpoint"]).is_file()
    folders = {p.resolve() for p in find_run_dirs(project) if p.name != "ensembles"}
    assert folders == {Path(r["run_dir"]).resolve() for r in trials}
    assert len({(r["id"], r["attempt"]) for r in trials}) == len(trials)
    assert [r for r in records if r.get("kind") == "ensemble"]


def test_the_session_keeps_its_chain_its_loop_and_its_outcomes_apart(session):
    project, out = session
    trials = {Path(r["run_dir"]).name: r for r in ScoreboardStore(project).read() if r.get("kind") != "ensemble"}
    chain = [trials[name] for name in ("warm1", "warm2", "warm3")]
    assert len({r["init_hash"] for r in chain}) == 3 and len({r["cell"] for r in chain}) == 3
    assert trials["base"]["cell"] == trials["seed43"]["cell"] == trials["seed44"]["cell"]
    assert trials["base"]["cell"] not in {r["cell"] for r in chain}
    assert trials["diverged"]["status"] == "diverged" and "(exit 3)" in out
    looped = sorted(r["hypothesis"] for r in trials.values() if r["hypothesis"])
    assert looped == ["H1", "H2"]
    assert not (project / "loop-r01" / "scoreboard.json").exists()  # one scoreboard: the project's
    lines = IterationLogStore(project).read()
    assert sorted((t["id"], t["attempt"]) for t in lines) == sorted((r["id"], r["attempt"]) for r in trials.values())
