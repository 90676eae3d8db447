"""`imf data demo` and `imf data info` from the command line."""
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from imf.data.replay_buffer import ReplayBuffer

pytestmark = pytest.mark.slow  # starts processes or trains: not in the unit tier


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


def _one_error_line(result, *words):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("imf: error:"), result.stderr
    assert all(word in lines[0] for word in words), lines[0]


def _not_zarr_zip(tmp_path):
    path = tmp_path / "notes.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("notes.txt", "hello")
    return path


def _empty_dir(tmp_path):
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


@pytest.mark.parametrize("make", [lambda tmp: tmp / "missing.zarr", _empty_dir, _not_zarr_zip],
                         ids=["missing", "empty-dir", "not-zarr-zip"])
def test_info_on_a_bad_path_is_one_line(tmp_path, make):
    path = make(tmp_path)
    _one_error_line(_imf("data", "info", str(path)), path.name)


def test_demo_with_a_bad_out_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("")
    _one_error_line(_imf("data", "demo", "--episodes", "1", "--out", str(tmp_path / "afile" / "d.zarr")), "afile")
    (tmp_path / "notes").mkdir()
    result = _imf("data", "demo", "--episodes", "1", "--out", str(tmp_path / "notes"), "--force")
    _one_error_line(result, "not a zarr store")
    assert result.stdout == ""  # it failed before the progress bar
