"""`imf data demo` and `imf data info` from the command line."""
import zipfile

import numpy as np
import pytest

from imf.data.replay_buffer import ReplayBuffer
from imf_process import run_imf

pytestmark = pytest.mark.slow  # starts processes or trains: not in the unit tier


def test_demo_then_info(tmp_path):
    out = tmp_path / "demo.zarr"
    made = run_imf("data", "demo", "--episodes", "1", "--out", str(out), "--seed", "2")
    assert made.returncode == 0, made.stderr
    buf = ReplayBuffer.open(out)
    assert buf.n_episodes == 1 and np.all(buf.episode_lengths > 0)
    info = run_imf("data", "info", str(out))
    assert info.returncode == 0, info.stderr
    assert "episodes   1" in info.stdout and "data/img" in info.stdout and "96, 96, 3)" in info.stdout
    again = run_imf("data", "demo", "--episodes", "1", "--out", str(out))
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
    _one_error_line(run_imf("data", "info", str(path)), path.name)


def test_demo_with_a_bad_out_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("")
    _one_error_line(run_imf("data", "demo", "--episodes", "1", "--out", str(tmp_path / "afile" / "d.zarr")), "afile")
    (tmp_path / "notes").mkdir()
    result = run_imf("data", "demo", "--episodes", "1", "--out", str(tmp_path / "notes"), "--force")
    _one_error_line(result, "not a zarr store")
    assert result.stdout == ""  # it failed before the progress bar


def test_demo_with_a_recipe_records_the_recipes_episodes(tmp_path):
    """`--noise` and `--finish` record what DemoRecipe's episodes are (the same seeds, the same
    data as the library makes), and a value outside its range is one line naming the flag."""
    from imf.pusht.expert import DEMO_SEED_BASE, DemoRecipe, run_expert_episode
    out = tmp_path / "recipe.zarr"
    made = run_imf("data", "demo", "--episodes", "1", "--out", str(out), "--noise", "5", "--finish", "0.98",
                   env={"IMF_CACHE": str(tmp_path / "cache")})
    assert made.returncode == 0, made.stderr
    buf = ReplayBuffer.open(out)
    expected = run_expert_episode(DEMO_SEED_BASE, record=True, recipe=DemoRecipe(5.0, 0.98))
    assert expected.success and buf.n_episodes == 1 and buf.episode_lengths[0] == expected.steps
    _one_error_line(run_imf("data", "demo", "--episodes", "1", "--out", str(tmp_path / "x.zarr"), "--noise", "-1"),
                    "--noise")
    fast_out = tmp_path / "fast.zarr"
    fast = run_imf("data", "demo", "--episodes", "1", "--out", str(fast_out), "--pace", "2",
                   env={"IMF_CACHE": str(tmp_path / "cache")})
    assert fast.returncode == 0, fast.stderr
    expected = run_expert_episode(DEMO_SEED_BASE, record=True, recipe=DemoRecipe(pace=2.0))
    assert ReplayBuffer.open(fast_out).episode_lengths[0] == expected.steps
    _one_error_line(run_imf("data", "demo", "--episodes", "1", "--out", str(tmp_path / "y.zarr"), "--pace", "0"),
                    "--pace 0.0", "(0, 4]")


@pytest.mark.parametrize("flag, value", [("--pace", "nan"), ("--pace", "9"), ("--pace", "-1"),
                                         ("--noise", "nan"), ("--noise", "-1"), ("--finish", "nan"),
                                         ("--finish", "1.5")])
def test_demo_recipe_flags_out_of_range_are_refused_before_any_folder(tmp_path, flag, value):
    """A recipe flag out of its range (NaN included) is one line naming the flag and the range it
    allows, and `--out`'s folder is not made: the recipe is checked before anything is written."""
    out = tmp_path / "new" / "demo.zarr"
    result = run_imf("data", "demo", "--episodes", "1", "--out", str(out), flag, value)
    allowed = {"--pace": "(0, 4]", "--noise": "0 or more", "--finish": "(0, 1]"}[flag]
    _one_error_line(result, flag, allowed)
    assert not (tmp_path / "new").exists()
