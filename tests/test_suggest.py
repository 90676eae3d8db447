"""``imf suggest`` on synthetic run folders whose right answer is known."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from imf.errors import ReportError
from imf.report import build_report
from imf.store.iteration_log import IterationLogStore
from imf.store.scoreboard import ScoreboardStore
from imf.suggest import as_json, render_text, suggest, write_hypothesis
from imf.suggest.rules import rising
from imf.report.model import Curve
from _suggest_runs import make_run
from imf_process import run_imf

FLAT = [0.8] * 6


def kinds(found) -> list[tuple[str, tuple[str, ...], int]]:
    return sorted((p.kind, tuple(f"{k}={v}" for k, v in p.settings.items()), p.seed)
                  for p in found.proposals)


def test_best_on_the_grid_edge_gets_the_cell_beyond_it(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.3] * 6)
    make_run(tmp_path, n_emb=256, n_layer=6, scores=FLAT)
    found = suggest(tmp_path)
    assert found.best["label"] == "smoke-causal-e256-l6"
    # its score is flat from the first epoch: a stall, so a curriculum too (tests/test_suggest_data.py)
    assert kinds(found) == [("curriculum", ("data.curriculum=easy_first",), 42),
                            ("neighbour", ("policy.n_emb=384",), 42),
                            ("neighbour", ("policy.n_layer=12",), 42)]
    by_id = {p.id: p for p in found.proposals}
    assert set(by_id) == {"smoke-causal-e384-l6-s42", "smoke-causal-e256-l12-s42",
                          "smoke-causal-e256-l6-s42-easy_first"}
    argv = by_id["smoke-causal-e384-l6-s42"].argv
    assert argv[:4] == ["imf", "trial", str(tmp_path / "smoke-causal-e256-l6-s42" / "config.yaml"),
                        "policy.n_emb=384"]
    assert argv[-4:] == ["--id", "smoke-causal-e384-l6-s42", "--out",
                         str(tmp_path / "smoke-causal-e384-l6-s42")]
    assert any("policy.n_emb=128 next to the best was already tried" in n for n in found.notes)
    assert "top edge of n_emb tried (128, 256)" in by_id["smoke-causal-e384-l6-s42"].reason


def test_cells_tied_within_noise_get_more_seeds_and_a_clear_loser_none(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.80] * 6, se=0.05)
    make_run(tmp_path, n_emb=256, n_layer=6, scores=[0.78] * 6, se=0.05)
    make_run(tmp_path, n_emb=384, n_layer=6, scores=[0.30] * 6, se=0.01)
    found = suggest(tmp_path)
    seeds = sorted((p.id, p.seed) for p in found.proposals if p.kind == "seeds")
    assert seeds == [("smoke-causal-e128-l6-s43", 43), ("smoke-causal-e128-l6-s44", 44),
                     ("smoke-causal-e256-l6-s43", 43), ("smoke-causal-e256-l6-s44", 44)]
    neighbours = [p.settings for p in found.proposals if p.kind == "neighbour"]
    assert neighbours == [{"policy.n_layer": 12}]  # n_emb 256 was tried, 0 is no size
    text = render_text(found)
    assert "is tied within noise with the best smoke-causal-e128-l6" in text
    assert "e384" not in " ".join(p.id for p in found.proposals)


def test_a_rising_best_run_gets_a_warm_start_continuation(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.2, 0.3, 0.4, 0.6, 0.7, 0.8])
    make_run(tmp_path, n_emb=256, n_layer=6, scores=[0.3] * 6)
    found = suggest(tmp_path)
    cont = [p for p in found.proposals if p.kind == "continue"]
    assert len(cont) == 1 and cont[0].id == "smoke-causal-e128-l6-s42-cont"
    argv = cont[0].argv
    best_pt = tmp_path / "smoke-causal-e128-l6-s42" / "checkpoints" / "best.pt"
    assert argv[argv.index("--init-from") + 1] == str(best_pt)
    assert "training.num_epochs=6" in argv and argv[argv.index("--seed") + 1] == "42"
    assert "still rising" in cont[0].reason and "(+0.4000 ± 0.0141)" in cont[0].reason
    # once a run warm-started from that checkpoint, it is not proposed again
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.5] * 6, init_from=str(best_pt),
             tid="by-hand-continuation")
    again = suggest(tmp_path)
    assert not [p for p in again.proposals if p.kind == "continue"]
    assert any("already tried (by-hand-continuation)" in n for n in again.notes)


def test_the_rising_test_needs_a_gain_beyond_noise_and_enough_rollouts():
    def curve(points):
        return Curve("t", None, [[i + 1, s, se] for i, (s, se) in enumerate(points)])
    assert rising(curve([(0.5, 0.01)] * 3 + [(0.6, 0.01)] * 3))[0]
    assert not rising(curve([(0.5, 0.05)] * 3 + [(0.55, 0.05)] * 3))[0]  # 0.05 < 1.96 * 0.071
    assert not rising(curve([(0.6, 0.01)] * 3 + [(0.5, 0.01)] * 3))[0]  # falling
    short, words = rising(curve([(0.1, 0.01), (0.9, 0.01)]))
    assert not short and "fewer than the 6" in words
    no_se = curve([(0.50, None), (0.51, None), (0.49, None), (0.70, None), (0.71, None), (0.69, None)])
    assert rising(no_se)[0]  # the spread of each window stands in for the noise


def test_another_numeric_axis_steps_beyond_the_edge_geometrically(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.3] * 6, tid="a", extra=("training.lr=1e-4",))
    make_run(tmp_path, n_emb=128, n_layer=6, scores=FLAT, tid="b", extra=("training.lr=3e-4",))
    found = suggest(tmp_path)
    lr = [p for p in found.proposals if "training.lr" in p.settings]
    assert [p.settings for p in lr] == [{"training.lr": 0.0009}]
    assert "training.lr=0.0009" in lr[0].argv and lr[0].id == "smoke-causal-e128-l6-s42-lr0.0009"
    assert {tuple(p.settings) for p in found.proposals} == {("training.lr",), ("policy.n_emb",),
                                                           ("policy.n_layer",), ("data.curriculum",)}


def test_one_run_without_episode_scores_gets_seeds_to_measure_its_noise(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, scores=FLAT, se=None)
    found = suggest(tmp_path)
    assert found.best["se"] is None
    seeds = [p for p in found.proposals if p.kind == "seeds"]
    assert [p.seed for p in seeds] == [43, 44] and "no noise estimate yet" in seeds[0].reason


def test_a_neighbour_recorded_in_the_scoreboard_only_is_not_proposed(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.3] * 6)
    make_run(tmp_path, n_emb=256, n_layer=6, scores=FLAT)
    ScoreboardStore(tmp_path).record({
        "id": "elsewhere-e384", "overrides": ["policy.n_emb=384", "training.seed=7"], "score": 0.2,
        "status": "completed", "config": {"mask": "causal", "n_emb": 384, "n_layer": 6},
        "run_dir": str(tmp_path / "moved-away")})
    found = suggest(tmp_path)
    assert [p.settings for p in found.proposals if p.kind == "neighbour"] == [{"policy.n_layer": 12}]
    assert any("policy.n_emb=384 next to the best was already tried" in n for n in found.notes)


def test_write_hypothesis_appends_one_block_once(tmp_path):
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[0.3] * 6)
    make_run(tmp_path, n_emb=256, n_layer=6, scores=FLAT)
    found = suggest(tmp_path)
    assert write_hypothesis(found) == "H1"
    block = IterationLogStore(tmp_path).hypotheses()[0]
    assert block["command"].splitlines() == [" ".join(p.argv) for p in found.proposals]
    assert "smoke-causal-e256-l6" in block["hypothesis"] and block["result"] is None
    again = suggest(tmp_path)
    assert {p.id: again.logged[p.id] for p in again.proposals} == {p.id: "H1" for p in found.proposals}
    assert [row["hypothesis"] for row in as_json(again)] == ["H1", "H1", "H1"]
    with pytest.raises(ReportError, match="already in H1"):
        write_hypothesis(again)
    assert len(IterationLogStore(tmp_path).hypotheses()) == 1


def test_one_run_folder_gets_its_proposals_beside_it(tmp_path):
    run = make_run(tmp_path, n_emb=128, n_layer=6, scores=FLAT)
    found = suggest(run)
    assert found.folder == tmp_path and found.proposals
    for proposal in found.proposals:
        out = Path(proposal.argv[proposal.argv.index("--out") + 1])
        assert out.parent == tmp_path and out.name == proposal.id


def test_the_current_run_folder_gets_its_proposals_and_log_beside_it(tmp_path, monkeypatch):
    run = make_run(tmp_path, n_emb=128, n_layer=6, scores=FLAT)
    monkeypatch.chdir(run)
    found = suggest(Path("."))
    assert found.proposals
    for proposal in found.proposals:
        out = Path(proposal.argv[proposal.argv.index("--out") + 1])
        assert out.resolve().parent == tmp_path.resolve()
    write_hypothesis(found)
    assert (tmp_path / "ITERATION_LOG.md").is_file() and not (run / "ITERATION_LOG.md").exists()


def test_missing_folder_and_no_scores_are_report_errors(tmp_path):
    with pytest.raises(ReportError, match="does not exist"):
        suggest(tmp_path / "nope")
    make_run(tmp_path, n_emb=128, n_layer=6, scores=[])
    with pytest.raises(ReportError, match="nothing to suggest from yet"):
        suggest(tmp_path)


@pytest.mark.slow
def test_the_command_line_prints_text_json_and_writes_the_hypothesis(tmp_path):
    folder = tmp_path / "runs"
    make_run(folder, n_emb=128, n_layer=6, scores=[0.3] * 6)
    make_run(folder, n_emb=256, n_layer=6, scores=FLAT)
    text = run_imf("suggest", "runs", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("best cell smoke-causal-e256-l6: 0.8000 ± 0.0100")
    assert ("imf trial runs/smoke-causal-e256-l6-s42/config.yaml policy.n_emb=384 --seed 42 "
            "--id smoke-causal-e384-l6-s42 --out runs/smoke-causal-e384-l6-s42") in text.stdout
    listed = run_imf("suggest", "runs", "--json", "--write-hypothesis", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["kind"] for r in rows] == ["neighbour", "neighbour", "curriculum"]
    assert listed.stderr.strip() == "wrote hypothesis H1 to runs/ITERATION_LOG.md"


@pytest.mark.slow
def test_the_command_line_names_the_log_it_wrote_beside_a_run_folder(tmp_path):
    run = make_run(tmp_path / "runs", n_emb=128, n_layer=6, scores=FLAT)
    proc = run_imf("suggest", str(run.relative_to(tmp_path)), "--write-hypothesis", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = tmp_path / proc.stdout.strip().splitlines()[-1].removeprefix("wrote hypothesis H1 to ")
    assert written.resolve() == (tmp_path / "runs" / "ITERATION_LOG.md").resolve()
    assert written.is_file() and not (run / "ITERATION_LOG.md").exists()


@pytest.mark.slow
@pytest.mark.parametrize("make, words", [
    (None, "imf: error: missing does not exist; give a sweep folder or run folders"),
    ("unscored", "no rollout yet); nothing to suggest from yet"),
])
def test_bad_folders_are_one_line(tmp_path, make, words):
    if make:
        make_run(tmp_path / "missing", n_emb=128, n_layer=6, scores=[])
    proc = run_imf("suggest", "missing", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], lines


def _with_topk(run: Path, epochs: list[int], scores: list[float]) -> None:
    for epoch in epochs:
        name = f"epoch={epoch:04d}-test_mean_score={scores[epoch]:.3f}.pt"
        (run / "checkpoints" / name).write_bytes(b"not a real checkpoint")


def test_tied_top_checkpoints_of_the_best_run_get_one_ensemble_proposal(tmp_path):
    scores = [0.5, 0.7, 0.8, 0.81, 0.79, 0.8]
    run = make_run(tmp_path, n_emb=128, n_layer=6, scores=scores, se=0.02)
    _with_topk(run, [2, 3, 4, 5, 1], scores)  # 0.7 is clear of the best 0.81 at SE 0.02
    found = suggest(tmp_path)
    [proposal] = [p for p in found.proposals if p.kind == "ensemble"]
    assert proposal.id == "smoke-causal-e128-l6-s42-top4-weights"
    assert proposal.argv[1:] == ["ensemble", str(run.resolve()), "--top", "4", "--mode", "weights"]
    assert "top 4 checkpoints of the best run smoke-causal-e128-l6-s42 (0.810, 0.800, 0.800, 0.790)" \
        in proposal.reason and "tied within noise" in proposal.reason
    ScoreboardStore(tmp_path).record({"id": proposal.id, "kind": "ensemble", "score": 0.82,
                                      "members": [], "status": "ensemble"})
    again = suggest(tmp_path)
    assert not [p for p in again.proposals if p.kind == "ensemble"]
    assert f"ensemble of smoke-causal-e128-l6-s42's top 4 already made ({proposal.id})" in again.notes
    assert [p.kind for p in again.proposals] == [p.kind for p in found.proposals if p.kind != "ensemble"]


def test_a_best_checkpoint_clear_of_the_next_gets_no_ensemble(tmp_path):
    scores = [0.5, 0.6, 0.9]
    run = make_run(tmp_path, n_emb=128, n_layer=6, scores=scores, se=0.01)
    _with_topk(run, [2, 1], scores)
    found = suggest(tmp_path)
    assert not [p for p in found.proposals if p.kind == "ensemble"]
    assert any(n.startswith("no ensemble of smoke-causal-e128-l6-s42: its best checkpoint 0.9000 ± 0.0100 "
                            "is clear of the next 0.6000 ± 0.0100") for n in found.notes)


def test_a_setting_older_run_folders_lack_makes_no_new_cell_and_no_repeat(tmp_path):
    # the base run was written by an imf before policy.encoder_width; its neighbour by today's
    old = make_run(tmp_path, n_emb=64, n_layer=2, scores=[0.6] * 6)
    config = yaml.safe_load((old / "config.yaml").read_text())
    del config["policy"]["encoder_width"]
    (old / "config.yaml").write_text(yaml.safe_dump(config))
    make_run(tmp_path, n_emb=96, n_layer=2, scores=[0.5] * 6)
    found = suggest(tmp_path)
    assert all(c.params == {} for c in build_report([tmp_path]).trends.cells)
    assert ("neighbour", ("policy.n_emb=96",), 42) not in kinds(found)
    assert not any("encoder_width" in p.id for p in found.proposals)
