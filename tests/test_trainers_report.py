"""``imf report`` of a program's sweep (issue 44): where imf's own trials show their model size,
a program's trials show the settings its grid varied, and empty model columns are left out."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from imf_process import run_imf

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trainers"


def test_a_programs_report_shows_its_grid_settings_not_empty_model_columns(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "code")
    done = run_imf("sweep", str(tmp_path / "code" / "toy.yaml"), "optim.steps=100", "--grid", "optim.lr=0.02,0.1",
                   "--grid", "model.features=8,32", "--queue", "local:cpu", "--out", str(tmp_path / "p"),
                   "--poll", "0.3", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    report = run_imf("report", str(tmp_path / "p" / "toy"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    heads = [line.split() for line in lines if line.startswith(("rank ", "cell "))]
    assert len(heads) == 2 and all("n_emb" not in h and "n_layer" not in h for h in heads), heads
    ranking, cells = heads
    assert ranking[:5] == ["rank", "trial", "status", "model.features", "optim.lr"], ranking
    assert cells[:3] == ["cell", "model.features", "optim.lr"], cells
    rows = {line.split()[1]: line.split() for line in lines if line.split()[1:2]
            and line.split()[1].startswith("toy-") and line.split()[0].isdigit()}
    assert len(rows) == 4, lines
    for tid, row in rows.items():  # toy-lr0.1-features8-s0: its own values under the grid's keys
        features, lr = tid.split("features")[1].split("-")[0], tid.split("lr")[1].split("-")[0]
        assert int(row[3]) == int(features) and float(row[4]) == float(lr), row
    markdown = (tmp_path / "p" / "toy" / "report.md").read_text()
    assert "| n_emb" not in markdown and "model.features" in markdown
