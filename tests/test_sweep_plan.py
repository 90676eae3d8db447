"""Planning: grids, trial ids, the cost model, longest-first assignment, bad input up front."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from imf.errors import ConfigError, QueueError, SweepError, UnknownPluginError
from imf.sweep.plan import assign, build_trials, cost_of, make_plan, parse_grids, render_plan
from imf.sweep.queues import detect_queues, load_hosts, resolve_queues
from imf.sweep.launch import SweepRequest, describe, plan_sweep

SEED_GRID = "128,256,384x6,12,18"


def test_seed_grid_makespan_within_ten_percent_of_the_lower_bound():
    trials = build_trials("seed", "pusht_image_imf", [SEED_GRID], [], mask="full", seed=42)
    assert len(trials) == 9
    plan = make_plan(trials, {"a": 1.0, "b": 1.0, "c": 1.0})
    costs = [t.cost for t in trials]
    bound = max(max(costs), sum(costs) / 3)
    makespan = max(plan.finish().values())
    assert makespan <= 1.10 * bound
    assert sorted(i for ids in plan.order.values() for i in ids) == sorted(t.id for t in trials)
    for ids in plan.order.values():  # longest first on every queue
        on_queue = [next(t.cost for t in trials if t.id == i) for i in ids]
        assert on_queue == sorted(on_queue, reverse=True)


def test_trial_ids_follow_the_spec_and_cost_grows_with_n_layer_and_n_emb_squared():
    trials = build_trials("seed", "pusht_image_imf", [SEED_GRID], [], mask="full", seed=42, epochs=350)
    ids = {t.id for t in trials}
    assert "seed-full-e384-l18-s42" in ids and "seed-full-e128-l6-s42" in ids
    assert all(t.epochs == 350 and t.params["mask"] == "full" for t in trials)
    assert cost_of(256, 12, 1) - cost_of(256, 6, 1) == pytest.approx(2 * (cost_of(256, 6, 1) - cost_of(256, 3, 1)))
    assert cost_of(384, 6, 1) - cost_of(0, 6, 1) == pytest.approx(4 * (cost_of(192, 6, 1) - cost_of(0, 6, 1)))


def test_key_grids_multiply_and_give_readable_unique_ids():
    trials = build_trials("s", "smoke", ["64x1,2", "training.lr=1e-4,3e-4", "seed=1,2"], [])
    assert len(trials) == 8
    ids = [t.id for t in trials]
    assert len(set(ids)) == 8
    assert "s-causal-e64-l2-s2-lr3e-4" in ids
    assert all(set(t.id) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-_")
               for t in trials)
    assert {t.seed for t in trials} == {1, 2}
    assert not any(o.startswith("training.seed") for t in trials for o in t.overrides)


@pytest.mark.parametrize("grid, error", [
    ("12x", SweepError), ("128,256", SweepError), ("nokey=1,2", SweepError), ("policy.n_emb=", SweepError),
    ("policy.n_emb=abc", ConfigError), ("policy.n_emb=90", ConfigError),  # 4 heads do not divide 90
])
def test_malformed_grids_fail_with_a_typed_error(grid, error):
    with pytest.raises(error):
        build_trials("s", "pusht_image_imf", [grid], [])


def test_same_key_twice_and_bad_names_are_rejected():
    with pytest.raises(SweepError, match="more than one grid"):
        parse_grids(["64x2", "policy.n_layer=4,6"])
    for bad in ("a/b", "s\n"):  # a trailing newline too: it would end up in every trial id
        with pytest.raises(SweepError, match="--name"):
            build_trials(bad, "smoke", [], [])


def test_speed_factor_gives_the_faster_queue_more_work():
    costs = {f"t{i}": 1.0 for i in range(9)}
    order = assign(costs, {"fast": 2.0, "slow": 1.0})
    assert len(order["fast"]) == 6 and len(order["slow"]) == 3


def test_queue_specs_names_speeds_and_errors():
    queues = resolve_queues(["local:cpu", "local:cpu?speed=0.5", "local:1"], load_hosts(None))
    assert [q.name for q in queues] == ["local:cpu", "local:cpu#2", "local:1"]
    assert queues[1].speed == 0.5 and queues[0].options["threads"] >= 1
    with pytest.raises(QueueError):
        resolve_queues(["local:gpu0"], load_hosts(None))
    with pytest.raises(QueueError):
        resolve_queues(["ssh://host/gpu"], load_hosts(None))
    with pytest.raises(UnknownPluginError, match="installed: .*local"):
        resolve_queues(["pbs://cluster/gpu:0"], load_hosts(None))


def test_hosts_file_options_and_unknown_keys(tmp_path):
    good = tmp_path / "hosts.yaml"
    good.write_text("defaults: {workdir: /w}\nhosts:\n  box: {python: /p/python, speed: 2}\n"
                    "queues: [local:cpu, 'ssh://me@box/gpu:1']\n")
    queues = resolve_queues([], load_hosts(good))
    assert queues[1].options == {"workdir": "/w", "python": "/p/python"} and queues[1].speed == 2.0
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts:\n  box: {pyhton: x}\n")
    with pytest.raises(SweepError, match="unknown key 'pyhton'"):
        load_hosts(bad)


def test_dry_run_text_names_queues_order_and_finish(tmp_path):
    request = SweepRequest(config="pusht_image_imf", grids=[SEED_GRID], mask="full", seed=42,
                           queues=["local:0", "local:1", "local:2"], name="seed", out=tmp_path)
    text = describe(*plan_sweep(request))
    assert text.count("queue local:") == 3 and "finishes at 1.00" in text
    assert "1. seed-full-e384-l18-s42" in text and "lower bound" in text
    assert not (tmp_path / "seed").exists()


@pytest.mark.parametrize("args, words", [
    (["--grid", "128,256x"], "--grid"),
    (["--queue", "gpu0"], "queue spec 'gpu0'"),
    (["--queue", "pbs://c/gpu:0"], "unknown scheduler 'pbs'"),
    (["--mask", "diagonal"], "unknown mask 'diagonal'"),
    (["logging.stores=[nostore]"], "unknown store 'nostore'"),
    (["--grid", "policy.mask=causal,nope"], "unknown mask 'nope'"),
    (["objective.name=nope"], "unknown objective 'nope'"),
    (["--grid", "policy.n_emb=a,b"], "expected an integer, got 'a'"),
    (["--poll", "0"], "--poll: must be"),
    (["--poll", "nan"], "--poll: must be"),
    (["--stall-timeout", "0"], "--stall-timeout: must be"),
    (["--retries", "-1"], "--retries: must be"),
    (["--epochs", "0"], "training.num_epochs"),
    (["--name", ""], "--name ''"),
    (["--queue", "local:cpu?speed=nan"], "speed must be a finite number > 0"),
])
@pytest.mark.slow
def test_bad_input_fails_before_anything_starts_with_one_line(tmp_path, args, words):
    cmd = [sys.executable, "-m", "imf", "sweep", "smoke", "--out", str(tmp_path / "runs"),
           "--queue", "local:cpu", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "IMF_TRIAL_COMMAND": "false"})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error: ") and words in lines[0]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("content, words", [
    (b"\xff\xfe", "cannot read it"),
    (b"hosts:\n  box: {speed: fast}\nqueues: ['ssh://box/gpu:0']\n", "speed must be a number, got 'fast'"),
    (b"defaults: {speed: .inf}\nqueues: [local:cpu]\n", "speed must be a finite number > 0"),
    (None, "cannot read it"),  # a folder
])
def test_unusable_hosts_files_are_sweep_errors(tmp_path, content, words):
    hosts = tmp_path / "hosts.yaml"
    hosts.mkdir() if content is None else hosts.write_bytes(content)
    with pytest.raises(SweepError, match=words):
        resolve_queues([], load_hosts(hosts))


def test_render_plan_with_unequal_speeds():
    trials = build_trials("s", "smoke", ["64,128x1,2"], [])
    text = render_plan(make_plan(trials, {"a": 1.0, "b": 3.0}))
    assert "speed 3" in text and text.count("  1. ") == 2


@pytest.mark.parametrize("visible, queues", [("2,3", ["local:2", "local:3"]), ("", ["local:cpu"]),
                                             ("-1", ["local:cpu"])])
def test_default_queues_follow_the_visible_gpus(monkeypatch, visible, queues):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert detect_queues() == queues


def test_without_gpus_the_default_queue_is_local_cpu(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    assert [q.name for q in resolve_queues([], load_hosts(None))] == ["local:cpu"]


@pytest.mark.slow
def test_the_missions_dry_run_on_a_machine_without_its_queues_is_refused_in_one_line(tmp_path):
    """The mission's command, here: no CUDA device 0 and no host gpubox. The dry run refuses as
    the start would (#41): one line naming each queue and why, exit 2, nothing written."""
    cmd = [sys.executable, "-m", "imf", "sweep", "--mask", "full", "--grid", SEED_GRID, "--epochs", "350",
           "--queue", "local:0", "--queue", "ssh://me@gpubox/gpu:0", "--queue", "ssh://me@gpubox/gpu:1",
           "--name", "seed", "--out", str(tmp_path), "--dry-run"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 2, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("imf: error: no queue passed its check:")
    assert "ssh://me@gpubox/gpu:0, ssh://me@gpubox/gpu:1: host me@gpubox unreachable" in line
    assert "local:0: no CUDA device 0" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_mask_full_without_config_uses_the_full_attention_preset(tmp_path):
    out = subprocess.run([sys.executable, "-m", "imf", "sweep", "--mask", "full", "--grid", "128x6",
                          "--dry-run", "--out", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "config pusht_image_imf_fullattn" in out.stdout
    assert not any(tmp_path.iterdir())  # a dry run writes nothing


def test_a_plugin_option_is_a_grid_axis_and_a_bad_one_fails_before_anything_starts():
    trials = build_trials("o", "smoke", ["objective.options.tangent=boundary,v_head"], [])
    assert [t.params["objective.options.tangent"] for t in trials] == ["boundary", "v_head"]
    with pytest.raises(ConfigError, match="'objective.options.tangent': got 'jvp', allowed: boundary, v_head"):
        build_trials("o", "smoke", ["objective.options.tangent=boundary,jvp"], [])
    with pytest.raises(ConfigError, match="unknown config key 'objective.options.widht' for objective 'imf'"):
        build_trials("o", "smoke", [], ["objective.options.widht=2"])
