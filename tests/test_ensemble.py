"""``imf ensemble``: weight soups and action ensembles of real tiny checkpoints, scored on selection
seeds, recorded in the scoreboard, ranked by the report beside the trials but never counted."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from imf.config import load_config
from imf.ensemble import make_ensemble, select
from imf.ensemble.score import one_observation
from imf.errors import EnsembleError
from imf.report import build_report
from imf.store.scoreboard import ScoreboardStore
from imf.train.checkpoint import load_checkpoint
from imf.train.evaluate import evaluate_checkpoint, policy_from_checkpoint
from imf.train.trial import TrialOptions, run_trial
from imf_process import run_imf, run_in_process

TINY = ["policy.obs_type=keypoints", "training.max_train_steps=6", "training.batch_size=32",
        "eval.n_test=3", "eval.n_train=0", "eval.max_steps=24", "eval.n_workers=1",
        "data.demo_episodes=4", "logging.swanlab=false", "training.val_probe_windows=64",
        "training.rollout_every=1", "training.checkpoint_topk=3", "training.lr=1e-3"]
FRESH = 4  # selection episodes of the tiny ensembles' scores


def _train(folder: Path, tid: str, demo_cache: str, extra: list[str]) -> Path:
    cfg = load_config("smoke", TINY + [f"data.cache_dir={demo_cache}", *extra])
    run_dir = folder / tid
    summary = run_trial(cfg, TrialOptions(trial_id=tid, run_dir=run_dir, stores=["scoreboard"]))
    assert summary["status"] == "completed"
    return run_dir


@pytest.fixture(scope="module")
def made(tmp_path_factory, demo_cache):
    """A folder of two tiny keypoint runs (3 top-k checkpoints of 64 wide; 1 of 32 wide) and
    three ensembles made from them."""
    folder = tmp_path_factory.mktemp("ens") / "runs"
    a = _train(folder, "kp-e64-s1", demo_cache, ["training.num_epochs=3", "training.seed=1"])
    b = _train(folder, "kp-e32-s2", demo_cache, ["training.num_epochs=1", "training.seed=2",
                                                 "policy.n_emb=32"])
    made = {name: make_ensemble(src, top, mode, final_eval=FRESH, device="cpu", echo=lambda _: None)
            for name, (src, top, mode) in {"weights": (a, 3, "weights"), "actions": (a, 3, "actions"),
                                           "sweep": (folder, 2, "actions")}.items()}
    return folder, a, b, made


@pytest.mark.slow
def test_weight_soup_is_the_mean_of_the_members_ema_weights_and_scores_as_recorded(made):
    folder, run, _, ens = made
    result = ens["weights"]
    assert result.checkpoint == folder / "ensembles" / "kp-e64-s1-top3-weights.pt"
    soup = load_checkpoint(result.checkpoint)
    members = [load_checkpoint(m.checkpoint) for m in result.selection.members]
    assert [m.checkpoint.parent for m in result.selection.members] == [run / "checkpoints"] * 3
    for key, value in soup["ema"].items():
        if torch.is_tensor(value) and value.is_floating_point():
            torch.testing.assert_close(value, torch.stack([m["ema"][key] for m in members]).mean(0))
    assert soup["normalizer"] == members[0]["normalizer"]
    selection = result.result["selection"]
    again = evaluate_checkpoint(result.checkpoint, n_test=FRESH, start_seed=500000, device="cpu")
    assert again["test_mean_score"] == pytest.approx(selection["mean"]) and selection["seed_start"] == 500000
    assert json.loads(result.result_file.read_text())["selection"]["per_seed"] == selection["per_seed"]
    assert result.result["latency"]["median_ms"] > 0 and result.result["latency"]["threads"] >= 1


@pytest.mark.slow
def test_action_ensemble_executes_the_mean_of_its_members_chunks(made):
    _, _, _, ens = made
    result = ens["actions"]
    state = load_checkpoint(result.checkpoint)
    assert state["kind"] == "ensemble" and len(state["members"]) == 3
    ensemble, cfg = policy_from_checkpoint(state, torch.device("cpu"))
    members = [policy_from_checkpoint(load_checkpoint(m.checkpoint), torch.device("cpu"))[0]
               for m in result.selection.members]
    obs = {k: torch.from_numpy(v) for k, v in one_observation(cfg, 500000).items()}
    chunk = ensemble.predict_action(obs, generator=torch.Generator().manual_seed(7))
    gen = torch.Generator().manual_seed(7)  # the members draw their noise in order from one generator
    expected = torch.stack([m.predict_action(obs, generator=gen) for m in members]).mean(0)
    torch.testing.assert_close(chunk, expected)
    assert chunk.shape == (1, cfg.policy.n_action_steps, 2)
    again = evaluate_checkpoint(result.checkpoint, n_test=FRESH, start_seed=500000, device="cpu")
    assert again["test_mean_score"] == pytest.approx(result.result["selection"]["mean"])


@pytest.mark.slow
def test_scoreboard_lists_members_and_keeps_a_trained_trial_best(made):
    folder, _, _, ens = made
    board = ScoreboardStore(folder)
    entries = {e["id"]: e for e in board.read()}
    entry = entries["kp-e64-s1-top3-actions"]
    assert entry["kind"] == "ensemble" and entry["mode"] == "actions" and entry["top"] == 3
    assert [m["checkpoint"] for m in entry["members"]] == [
        m.checkpoint.relative_to(folder).as_posix() for m in ens["actions"].selection.members]
    assert entry["score"] == pytest.approx(ens["actions"].result["selection"]["mean"])
    assert Path(entry["checkpoint"]) == ens["actions"].checkpoint.resolve()
    assert board.best()["trial"] in ("kp-e64-s1", "kp-e32-s2")


@pytest.mark.slow
def test_report_lists_ensembles_after_the_trials_but_counts_none(made):
    folder, _, _, ens = made
    report = build_report([folder])
    ids = {e.selection.id for e in ens.values()}
    rows = {t.id: t for t in report.trials}
    # the trials ranked by their max; the ensembles after them, set against the trials' selection seeds
    assert ids <= set(rows) and all(rows[i].rank is None and rows[i].vs_selection for i in ids)
    assert [t.is_ensemble for t in report.trials] == [False, False, True, True, True]
    assert sorted(t.rank for t in report.trials if t.rank) == [1, 2]
    for i in ids:
        assert rows[i].cell is None and rows[i].seed is None and rows[i].status == "ensemble"
        assert rows[i].selection == pytest.approx(ens_mean(ens, i))
    assert sorted(t for c in report.trends.cells for t in c.trials) == ["kp-e32-s2", "kp-e64-s1"]
    assert sum(g.trials for g in report.trends.by_n_emb) == 2
    assert {s for c in report.trends.cells for s in c.seeds} == {1, 2}
    from imf.report import render_text
    assert render_text(report).startswith("2 trial(s), 2 scored, in 2 scored cell(s), and 3 ensemble(s) after them")


def ens_mean(ens, tid: str) -> float:
    return next(e.result["selection"]["mean"] for e in ens.values() if e.selection.id == tid)


@pytest.mark.slow
def test_sweep_actions_mixes_architectures_weights_refuses_them(made, tmp_path):
    folder, a, b, ens = made
    members = ens["sweep"].selection.members
    assert {m.trial for m in members} == {"kp-e64-s1", "kp-e32-s2"}
    assert all(m.checkpoint.name == "best.pt" for m in members)
    with pytest.raises(EnsembleError, match=r"differ in architecture \(policy.n_emb"):
        make_ensemble(folder, 2, "weights", final_eval=FRESH, device="cpu", echo=lambda _: None)
    assert not (folder / "ensembles" / f"{folder.name}-top2-weights.pt").exists()


@pytest.mark.slow
def test_the_command_line_makes_one_and_refuses_bad_inputs_in_one_line(made, tmp_path, monkeypatch, capsys):
    folder, _, _, _ = made
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    shutil.copytree(folder, runs, ignore=shutil.ignore_patterns("ensembles", "scoreboard.json*"))
    (tmp_path / "one" / "checkpoints").mkdir(parents=True)
    shutil.copy(runs / "kp-e32-s2" / "summary.json", tmp_path / "one" / "summary.json")
    shutil.copy(next((runs / "kp-e32-s2" / "checkpoints").glob("epoch=*")), tmp_path / "one" / "checkpoints")
    bad = [(["runs/kp-e64-s1", "--top", "0", "--mode", "weights"], "--top 0: an ensemble needs 2 or more"),
           (["runs/kp-e64-s1", "--top", "2", "--mode", "median"], "--mode median: unknown ensemble mode; allowed: weights, actions"),
           (["missing", "--top", "2", "--mode", "weights"], "ensemble source missing does not exist"),
           (["one", "--top", "2", "--mode", "actions"], "has 1 top-k checkpoints in one/checkpoints; an ensemble needs 2 or more"),
           (["runs/kp-e64-s1", "--top", "4", "--mode", "actions"], "--top 4: runs/kp-e64-s1 has only 3"),
           (["runs", "--top", "2", "--mode", "weights"], "differ in architecture (policy.n_emb ")]
    for number, (args, words) in enumerate(bad):  # the first as a real process, the rest in this one
        argv = ["ensemble", *args, "--final-eval", str(FRESH), "--device", "cpu"]
        if number == 0:
            proc = run_imf(*argv, cwd=tmp_path)
            code, err = proc.returncode, proc.stderr
        else:
            code, _, err = run_in_process(monkeypatch, capsys, *argv)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("imf: error: "), (args, err)
        assert words in lines[0], (words, lines[0])
    assert not (runs / "ensembles").exists() and not (runs / "scoreboard.json").exists()
    assert not list(tmp_path.rglob("*.tmp"))

    proc = run_imf("ensemble", "runs/kp-e64-s1", "--top", "2", "--mode", "weights", "--final-eval",
                   str(FRESH), "--device", "cpu", "--out", "soup.pt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ensemble kp-e64-s1-top2-weights: mean " in proc.stdout and "chunk latency: " in proc.stdout
    ev = run_imf("eval", "soup.pt", "--json", "--n-test", str(FRESH), "--start-seed", "500000", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    recorded = json.loads((tmp_path / "soup.json").read_text())["selection"]["mean"]
    assert json.loads(ev.stdout)["test_mean_score"] == pytest.approx(recorded)
    assert [e["id"] for e in ScoreboardStore(runs).read()] == ["kp-e64-s1-top2-weights"]


@pytest.mark.slow
def test_an_action_ensemble_is_no_warm_start(made, tmp_path, demo_cache):
    _, _, _, ens = made
    proc = run_imf("trial", "smoke", *TINY, f"data.cache_dir={demo_cache}", "--out", str(tmp_path / "w"),
                   "--init-from", str(ens["actions"].checkpoint), "--store", "none")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "is an action ensemble of 3 models" in lines[0]


# unit tier: no training -----------------------------------------------------------------
def test_bad_requests_are_refused_before_any_file_is_read(tmp_path):
    with pytest.raises(EnsembleError, match="--top 1: an ensemble needs 2 or more members"):
        select(tmp_path, 1, "weights")
    with pytest.raises(EnsembleError, match="--mode soup: unknown ensemble mode; allowed: weights, actions"):
        select(tmp_path / "missing", 3, "soup")
    with pytest.raises(EnsembleError, match="missing does not exist"):
        select(tmp_path / "missing", 3, "weights")


def test_members_are_the_run_top_k_best_first_and_a_sweep_needs_two_runs(tmp_path):
    run = tmp_path / "sweep" / "r1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"id": "r1", "best_score": 0.9,
                                                  "checkpoints": {"best": "checkpoints/best.pt"}}))
    for name in ("epoch=0003-test_mean_score=0.500.pt", "epoch=0007-test_mean_score=0.900.pt",
                 "epoch=0005-test_mean_score=0.900.pt", "best.pt", "latest.pt"):
        (run / "checkpoints" / name).write_bytes(b"x")
    chosen = select(run, 2, "actions")
    assert [(m.epoch, m.score) for m in chosen.members] == [(5, 0.9), (7, 0.9)]
    assert chosen.id == "r1-top2-actions" and chosen.root == run.parent.resolve()
    assert chosen.default_out() == run.parent.resolve() / "ensembles" / "r1-top2-actions.pt"
    with pytest.raises(EnsembleError, match="has 1 runs with a best checkpoint under .*needs 2 or more"):
        select(tmp_path / "sweep", 2, "actions")


def _sweep_run(folder: Path, tid: str, score: float, n_emb: int) -> None:
    run = folder / tid
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"x")
    (run / "summary.json").write_text(json.dumps({"id": tid, "best_score": score, "best_epoch": 3,
                                                  "checkpoints": {"best": "checkpoints/best.pt"}}))
    (run / "config.yaml").write_text(f"policy:\n  n_emb: {n_emb}\n  n_layer: 2\nobjective:\n  name: imf\n")


def test_a_sweep_soup_takes_the_best_runs_of_the_best_runs_architecture(tmp_path):
    sweep = tmp_path / "sweep"
    for tid, score, n_emb in [("a", 0.9, 64), ("b", 0.85, 32), ("c", 0.8, 64), ("d", 0.7, 64)]:
        _sweep_run(sweep, tid, score, n_emb)
    assert [m.trial for m in select(sweep, 2, "weights").members] == ["a", "c"]
    assert [m.trial for m in select(sweep, 2, "actions").members] == ["a", "b"]  # any architecture
    with pytest.raises(EnsembleError, match=r"3 of the runs under .* \(the best run a included\) share "
                                            r"its architecture; b and the others differ in architecture "
                                            r"\(policy.n_emb 64 vs 32\); give --top 3 or fewer"):
        select(sweep, 4, "weights")
    (sweep / "c").rename(tmp_path / "c")
    (sweep / "d").rename(tmp_path / "d")
    with pytest.raises(EnsembleError, match="needs 2 or more runs of one architecture: use --mode actions"):
        select(sweep, 2, "weights")


def _selection(run, mean: float, se: float) -> None:
    (run / "final_eval.json").write_text(json.dumps({"checkpoint": "checkpoints/best.pt", "episodes": 200,
                                                     "seed_start": 500000, "mean": mean, "se": se}))


def test_an_ensemble_entry_is_set_against_the_trials_selection_scores_and_counted_nowhere(tmp_path):
    from test_suggest import make_run
    _selection(make_run(tmp_path, n_emb=128, n_layer=6, seed=42, scores=[0.7, 0.8]), 0.70, 0.01)
    _selection(make_run(tmp_path, n_emb=128, n_layer=6, seed=43, scores=[0.6, 0.75]), 0.74, 0.01)
    ScoreboardStore(tmp_path).record({
        "id": "smoke-causal-e128-l6-s42-top2-weights", "kind": "ensemble", "mode": "weights",
        "top": 2, "score": 0.78, "se": 0.01, "episodes": 200, "success_rate": 0.3,
        "status": "ensemble", "config": {"n_emb": 128, "n_layer": 6},
        "members": [{"trial": "smoke-causal-e128-l6-s42", "epoch": 1}, {"trial": "smoke-causal-e128-l6-s42", "epoch": 0}]})
    report = build_report([tmp_path], rank_by="max")
    # the trials by their max on the test seeds; the ensemble after them, never numbered by a max
    assert [(t.id, t.rank) for t in report.trials] == [
        ("smoke-causal-e128-l6-s42", 1), ("smoke-causal-e128-l6-s43", 2),
        ("smoke-causal-e128-l6-s42-top2-weights", None)]
    ensemble = report.trials[2]
    assert (ensemble.selection, ensemble.selection_episodes, ensemble.selection_success) == (0.78, 200, 0.3)
    assert ensemble.best_score is None
    # against the best trial on the same selection seeds (s43's 0.74), not s42's test-seed max 0.8
    assert ensemble.vs_selection == "above smoke-causal-e128-l6-s43"
    assert ensemble.members == ["smoke-causal-e128-l6-s42@1", "smoke-causal-e128-l6-s42@0"]
    [cell] = report.trends.cells
    assert cell.trials == ["smoke-causal-e128-l6-s42", "smoke-causal-e128-l6-s43"] and cell.seeds == [42, 43]
    assert cell.mean == pytest.approx(0.775) and report.trends.by_n_emb[0].trials == 2
    assert "of the 2 trials" not in report.trends.selection and "1 of 1 pair" in report.trends.selection  # two trials, no ensemble
    assert ScoreboardStore(tmp_path).best() is None  # the trials were never recorded; an ensemble is no best
