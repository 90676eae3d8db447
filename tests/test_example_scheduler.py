"""The example third-party scheduler in examples/imf_nohup_scheduler: found by entry point from a
fake install, and a real `imf sweep` runs its trials through it to the report."""
import json

import pytest
from imf_process import run_imf
from plugin_fakes import NOHUP_PLUGIN_DIR, fake_install

pytestmark = pytest.mark.slow  # a real sweep of real trials


def _fake_install(tmp_path):
    return fake_install(tmp_path / "site", NOHUP_PLUGIN_DIR / "imf_nohup_scheduler", "imf-nohup-scheduler",
                        {"imf.schedulers": {"nohup": "imf_nohup_scheduler:NohupScheduler"}})


def test_a_real_sweep_runs_through_the_nohup_scheduler(tmp_path, demo_cache):
    env = {"PYTHONPATH": str(_fake_install(tmp_path))}
    listed = run_imf("plugins", env=env)
    assert "nohup            imf-nohup-scheduler 0.1.0" in listed.stdout, listed.stdout
    proc = run_imf("sweep", "smoke", "--grid", "32x1,2", "--queue", "nohup:1", "--queue", "nohup:2",
                   "--name", "via-nohup", "--out", str(tmp_path / "runs"), "--poll", "1",
                   "training.num_epochs=1", "training.max_train_steps=4", "eval.n_test=1", "eval.max_steps=8",
                   "data.demo_episodes=4", f"data.cache_dir={demo_cache}", cwd=tmp_path, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    sweep = tmp_path / "runs" / "via-nohup"
    state = json.loads((sweep / "sweep.json").read_text())
    assert sorted(t["state"] for t in state["trials"]) == ["completed", "completed"]
    assert {t["queue"] for t in state["trials"]} <= {"nohup:1", "nohup:2"}
    for trial in state["trials"]:
        folder = sweep / trial["id"]
        assert (folder / "pid").read_text().split()[2] == trial["handle"]["token"]  # the wrapper's files
        assert (folder / "exit_code").read_text().split() == ["0", trial["handle"]["token"]]
    assert (sweep / "report.md").is_file()
