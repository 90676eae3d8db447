"""Diffusion Policy output folders read faithfully: restarts, status, layout, sizes, out folder."""
from __future__ import annotations

import datetime
import json
import subprocess
import sys

import pytest
import yaml

from imf.report import build_report
from imf.store.runs import find_run_dirs, log_segments, row_episode_scores


def dp_rows(epochs: int, steps: int, scores: dict[int, list[float]], start_step: int = 0,
            last_epoch_steps: int | None = None) -> list[dict]:
    """Diffusion Policy's logs.json.txt: a line per training step; the last line of an epoch
    also holds val_loss and, on rollout epochs, test/mean_score and test/sim_max_reward_<seed>."""
    rows, step = [], start_step
    for epoch in range(epochs):
        count = last_epoch_steps if epoch == epochs - 1 and last_epoch_steps else steps
        for k in range(count):
            row = {"train_loss": 0.5, "global_step": step, "epoch": epoch, "lr": 1e-4}
            if k == steps - 1:
                row["val_loss"] = 1.0 / (epoch + 1)
                if epoch in scores:
                    episodes = scores[epoch]
                    row["test/mean_score"] = sum(episodes) / len(episodes)
                    row.update({f"test/sim_max_reward_{100000 + i}": v for i, v in enumerate(episodes)})
            rows.append(row)
            step += 1
    return rows


def make_dp(folder, rows, n_emb=256, n_layer=8, logs=True):
    (folder / ".hydra").mkdir(parents=True)
    config = {"name": "train_diffusion_transformer_hybrid", "task_name": "pusht_image",
              "policy": {"n_emb": n_emb, "n_layer": n_layer},
              "training": {"seed": 42, "num_epochs": 100, "device": "cuda:0"},
              "logging": {"name": folder.name}, "created": datetime.date(2024, 1, 1)}  # a YAML date
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    if logs:
        (folder / "logs.json.txt").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_segments_of_a_restarted_log():
    first = dp_rows(2, 3, {})  # global_step 0..5
    second = dp_rows(3, 3, {})  # restarted: 0..8
    segments = log_segments(first + second)
    assert [len(s) for s in segments] == [6, 9]
    assert [r["global_step"] for r in segments[1]][:2] == [0, 1]
    assert log_segments([]) == [[]]
    assert len(log_segments(first + [{"note": "no step"}] + first)) == 2


def test_per_episode_scores_in_both_spellings():
    assert row_episode_scores({"test_per_seed": {"1": 0.5, "2": 1.0}}) == [0.5, 1.0]
    assert row_episode_scores({"test/sim_max_reward_7": 0.25, "test/sim_max_reward_8": True,
                               "train/sim_max_reward_0": 0.9}) == [0.25]


def test_restarted_run_reports_its_last_segment(tmp_path):
    old = dp_rows(3, 2, {1: [1.0, 1.0], 2: [0.9, 0.9]})  # a high score the last run never had
    new = dp_rows(3, 2, {0: [0.2, 0.4], 2: [0.5, 0.7]})
    run = make_dp(tmp_path / "outputs" / "2024.01.01" / "10.00.00_train", old + new)
    report = build_report([run])
    row = report.trials[0]
    assert (row.restarts, row.best_score, row.best_epoch, row.rollouts) == (1, 0.6, 3, 2)
    assert row.best_se == pytest.approx(0.1)  # 0.5, 0.7: sd 0.1414, / sqrt(2)
    assert report.curves[0].rollouts == [[1, pytest.approx(0.3), pytest.approx(0.1)],
                                         [3, pytest.approx(0.6), pytest.approx(0.1)]]
    assert [e for e, _ in report.curves[0].val_loss] == [1, 2, 3]
    assert report.notices == ["10.00.00_train: log restarted 1 time(s) (global_step went back); "
                              "using the last segment, 6 earlier line(s) left out"]


def test_status_is_never_invented(tmp_path):
    make_dp(tmp_path / "done", dp_rows(3, 4, {2: [0.5]}))  # every epoch whole: still unknown
    make_dp(tmp_path / "cut", dp_rows(3, 4, {1: [0.5]}, last_epoch_steps=2))
    by_id = {t.id: t for t in build_report([tmp_path]).trials}
    assert by_id["done"].status == "unknown" and by_id["cut"].status == "incomplete"
    assert by_id["cut"].final_epoch == 3


def test_repository_root_finds_outputs_by_layout(tmp_path):
    root = tmp_path / "diffusion_policy"
    outputs = root / "data" / "outputs"
    make_dp(outputs / "2024.01.01" / "10.00.00_train_a", dp_rows(2, 2, {1: [0.6, 0.8]}))
    make_dp(outputs / "2024.01.02" / "09.00.00_multi" / "0", dp_rows(2, 2, {1: [0.4, 0.6]}), n_emb=128)
    make_dp(outputs / "2024.01.03" / "08.00.00_started", [], n_emb=384, n_layer=12, logs=False)
    (root / "data" / "pusht" / "pusht_cchi_v7_replay.zarr" / "data").mkdir(parents=True)
    (root / ".venv" / "lib").mkdir(parents=True)
    (outputs / "2024.01.09" / "07.00.00_again" / "attempts" / "1").mkdir(parents=True)  # not a run
    (outputs / "2024.01.09" / "07.00.00_again" / "attempts" / "1" / "logs.json.txt").write_text("")
    found = [p.relative_to(outputs).as_posix() for p in find_run_dirs(root)]
    assert found == ["2024.01.01/10.00.00_train_a", "2024.01.02/09.00.00_multi/0",
                     "2024.01.03/08.00.00_started"]
    by_id = {t.id: t for t in build_report([root]).trials}
    assert len(by_id) == 3
    started = by_id["data/outputs/2024.01.03/08.00.00_started"]
    assert (started.n_emb, started.n_layer, started.best_score, started.source) == (
        384, 12, None, "diffusion_policy")
    multi = by_id["data/outputs/2024.01.02/09.00.00_multi/0"]
    assert (multi.n_emb, multi.best_score) == (128, pytest.approx(0.5))


def test_seeds_of_dp_runs_group_by_hydra_config(tmp_path):
    make_dp(tmp_path / "a", dp_rows(1, 1, {0: [0.6, 0.6]}))
    b = make_dp(tmp_path / "b", dp_rows(1, 1, {0: [0.8, 0.8]}))
    config = yaml.safe_load((b / ".hydra" / "config.yaml").read_text())
    config["training"]["seed"] = 43
    (b / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    cells = build_report([tmp_path]).trends.cells
    assert len(cells) == 1 and cells[0].seeds == [42, 43] and cells[0].mean == pytest.approx(0.7)


@pytest.mark.slow  # starts imf as a process
def test_report_at_a_dp_root_writes_to_the_folder_named(tmp_path):
    root = tmp_path / "diffusion_policy"
    run = make_dp(root / "data" / "outputs" / "2024.01.01" / "10.00.00_train",
                  dp_rows(2, 2, {1: [0.6, 0.8]}))
    out = subprocess.run([sys.executable, "-m", "imf", "report", "."], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (root / "report.md").exists() and (root / "heatmap.png").exists()
    assert sorted(p.name for p in run.iterdir()) == [".hydra", "logs.json.txt"]
    out = subprocess.run([sys.executable, "-m", "imf", "report", str(run)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "report files not written" in out.stderr and not (tmp_path / "report.md").exists()
    assert sorted(p.name for p in run.iterdir()) == [".hydra", "logs.json.txt"]
