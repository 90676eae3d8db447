"""`imf trial --resume` keeps the run as it was (id, note, files); trial ids stay in their root."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from imf_process import run_imf

pytestmark = pytest.mark.slow  # starts processes or trains: not in the unit tier

TINY = ["training.max_train_steps=2", "training.batch_size=8", "eval.n_test=1", "eval.n_train=0",
        "eval.max_steps=8", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false",
        "training.num_epochs=1"]


@pytest.fixture(scope="module")
def done_run(tmp_path_factory) -> Path:
    """A completed one-epoch run named myrun-1 with a note, recorded in its parent's stores."""
    from imf.pusht.expert import ensure_demo_dataset
    root = tmp_path_factory.mktemp("resume")
    cache = root / "cache"
    ensure_demo_dataset(4, seed=0, cache_dir=str(cache))
    out = run_imf("trial", "smoke", *TINY, f"data.cache_dir={cache}", "--id", "myrun-1", "--note", "hello",
               "--out", str(root / "runs" / "myrun-1"), cwd=root)
    assert out.returncode == 0, out.stderr
    return root / "runs" / "myrun-1"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_resume_that_cannot_load_leaves_every_file_as_it_was(done_run, tmp_path):
    run = tmp_path / "runs" / "myrun-1"
    run.parent.mkdir()
    subprocess.run(["cp", "-a", str(done_run), str(run)], check=True)
    for name in ("scoreboard.json", "ITERATION_LOG.md"):
        (run.parent / name).write_bytes((done_run.parent / name).read_bytes())
    (run / "checkpoints" / "latest.pt").write_bytes(b"")
    before = _files(run.parent)
    out = run_imf("trial", "--resume", "--out", str(run), cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: ") and "latest.pt" in lines[0], out.stderr
    assert _files(run.parent) == before
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"


@pytest.mark.slow
def test_a_resume_keeps_the_trial_id_note_and_overrides_of_the_run(done_run, tmp_path):
    run = tmp_path / "runs" / "myrun-1"
    run.parent.mkdir()
    subprocess.run(["cp", "-a", str(done_run), str(run)], check=True)
    first = json.loads((run / "summary.json").read_text())
    out = run_imf("trial", "--resume", "--out", str(run), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["id"] == "myrun-1" and summary["note"] == "hello"
    assert summary["overrides"] == first["overrides"] and summary["overrides"]
    board = json.loads((run.parent / "scoreboard.json").read_text())
    assert [t["id"] for t in board["trials"]] == ["myrun-1"]
    assert "smoke-causal" not in (run.parent / "ITERATION_LOG.md").read_text()
    other = run_imf("trial", "--resume", "--out", str(run), "--id", "renamed", cwd=tmp_path)
    assert other.returncode == 2 and "myrun-1" in other.stderr


@pytest.mark.parametrize("bad", ["../../x", "a/b", ".hidden", "-dash", "sp ace", ""])
def test_trial_ids_that_are_not_plain_names_are_refused_before_anything_is_written(tmp_path, bad):
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    out = run_imf("trial", "smoke", *TINY, f"--id={bad}", cwd=cwd)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: --id") and "[A-Za-z0-9._-]" in lines[0]
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
