"""`imf data demo` and `imf data info` from the command line."""
import subprocess
import sys

import numpy as np

from imf.data.replay_buffer import ReplayBuffer


def _imf(*args):
    code = "import sys; from imf.cli import main; sys.argv = ['imf'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def test_demo_then_info(tmp_path):
    out = tmp_path / "demo.zarr"
    made = _imf("data", "demo", "--episodes", "1", "--out", str(out), "--seed", "2")
    assert made.returncode == 0, made.stderr
    buf = ReplayBuffer.open(out)
    assert buf.n_episodes == 1 and np.all(buf.episode_lengths > 0)
    info = _imf("data", "info", str(out))
    assert info.returncode == 0, info.stderr
    assert "episodes   1" in info.stdout and "data/img" in info.stdout and "96, 96, 3)" in info.stdout
    again = _imf("data", "demo", "--episodes", "1", "--out", str(out))
    assert again.returncode == 2 and "--force" in again.stderr


def test_info_on_a_bad_path_is_one_line(tmp_path):
    result = _imf("data", "info", str(tmp_path / "missing.zarr"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error:") and "missing.zarr" in lines[0]
