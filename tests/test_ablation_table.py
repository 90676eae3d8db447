"""benchmarks/ablation.py's table: the rows already committed stay beside the folder's runs, so a
session that measures one more change does not need the earlier sessions' run folders."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import ablation  # noqa: E402


def _row(name: str, score: float) -> dict:
    return {"name": name, "change": [] if name == "base" else [f"x={name}"], "obs": "image", "steps": 10,
            "samples_s": 100.0, "best_test_score": score, "best_test_score_se": 0.01, "best_test_success": 0.1,
            "selection_score": score, "selection_score_se": 0.01, "selection_success": 0.1,
            "selection_success_se": 0.01}


def test_committed_rows_stay_and_a_folder_measured_again_replaces_its_row(tmp_path, monkeypatch):
    results = tmp_path / "learning_results"
    results.mkdir()
    (results / "ablations_image.json").write_text(json.dumps([_row("base", 0.5), _row("old", 0.6)]))
    monkeypatch.setattr(ablation, "RESULTS_DIR", results)
    monkeypatch.setattr(ablation, "write_section", lambda section, text: None)
    runs = tmp_path / "runs"
    for name in ("old", "new"):
        (runs / name).mkdir(parents=True)
    monkeypatch.setattr(ablation, "read_run", lambda folder: _row(folder.name, 0.7))
    text = ablation.table(runs, "base", write=True)
    rows = {r["name"]: r["best_test_score"] for r in json.loads((results / "ablations_image.json").read_text())}
    assert rows == {"base": 0.5, "old": 0.7, "new": 0.7}
    written = json.loads((results / "ablations_image.json").read_text())
    assert all(r["holdout_score"] is None and r["holdout_looks"] == 0 for r in written)  # never looked at
    assert text.index("| base |") < text.index("| new |")  # the baseline first, wherever it came from
    ablation.table(runs, "base", write=True, only=True)
    assert {r["name"] for r in json.loads((results / "ablations_image.json").read_text())} == {"old", "new"}
