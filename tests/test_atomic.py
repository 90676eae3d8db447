"""imf.atomic: the one temp-then-rename writer, and the cleanup of temps killed writers left."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from imf.atomic import atomic_path, clean_stale_temps, temp_path


def _temp_of(folder, name: str, pid: int, age_s: float = 0.0, host: str | None = None):
    path = folder / f".{name}.{pid}@{host or socket.gethostname()}.0123abcd.tmp"
    path.write_text("half")
    if age_s:
        os.utime(path, (path.stat().st_atime - age_s, path.stat().st_mtime - age_s))
    return path


def test_a_file_written_at_the_temp_path_replaces_the_target(tmp_path):
    target = tmp_path / "latest.pt"
    target.write_text("old")
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".latest.pt.") and not tmp.exists()
        tmp.write_text("new")
        assert target.read_text() == "old"
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["latest.pt"]


def test_an_error_inside_keeps_the_old_file_and_removes_the_temp(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_folder_replaces_an_old_folder_whole(tmp_path):
    target = tmp_path / "data.zarr"
    (target / "old").mkdir(parents=True)
    (target / "old" / "x").write_text("1")
    with atomic_path(target) as tmp:
        (tmp / "new").mkdir(parents=True)
        (tmp / "new" / "y").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == ["new"]
    assert [p.name for p in tmp_path.iterdir()] == ["data.zarr"]


@pytest.mark.parametrize("umask, mode", [(0o077, 0o600), (0o022, 0o644), (0o002, 0o664)])
def test_a_new_file_gets_the_umask_permissions(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        with atomic_path(tmp_path / "ckpt.pt") as tmp:
            with open(tmp, "wb") as handle:  # as torch.save opens it
                handle.write(b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "ckpt.pt").stat().st_mode & 0o777 == mode


def test_a_temp_of_this_process_is_never_cleaned(tmp_path):
    mine = temp_path(tmp_path / "summary.json")
    mine.write_text("being written")
    os.utime(mine, (0, 0))
    assert clean_stale_temps(tmp_path, ("summary.json",)) == 0 and mine.exists()


@pytest.mark.slow
def test_a_leftover_of_a_dead_writer_goes_and_a_live_writers_temp_stays(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    leftover = _temp_of(tmp_path, "summary.json", int(dead.stdout))  # young, but its writer is gone
    leftover_dir = tmp_path / f".data.zarr.{dead.stdout.strip()}@{socket.gethostname()}.89abcdef.tmp"
    (leftover_dir / "data").mkdir(parents=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        running = _temp_of(tmp_path, "latest.pt", live.pid, age_s=3600)  # old, but still written
        assert clean_stale_temps(tmp_path) == 2
        assert not leftover.exists() and not leftover_dir.exists() and running.exists()
    finally:
        live.kill()
        live.wait()


def test_temps_that_name_no_pid_of_this_host_go_by_age(tmp_path):
    elsewhere = _temp_of(tmp_path, "a.json", 1, host="other-host")  # pid 1 runs here: no matter
    old_form = tmp_path / ".b.json.k2j3.tmp"
    old_form.write_text("half")
    assert clean_stale_temps(tmp_path) == 0
    for path in (elsewhere, old_form):
        os.utime(path, (0, 0))
    assert clean_stale_temps(tmp_path) == 2 and not elsewhere.exists() and not old_form.exists()


def test_in_a_folder_imf_does_not_own_only_the_named_files_temps_are_looked_at(tmp_path):
    ours, theirs = tmp_path / ".demo.zarr.k2j3.tmp", tmp_path / ".notes.txt.k2j3.tmp"
    for path in (ours, theirs):
        path.write_text("half")
        os.utime(path, (0, 0))
    assert clean_stale_temps(tmp_path, only=("demo.zarr",)) == 1
    assert not ours.exists() and theirs.exists()
