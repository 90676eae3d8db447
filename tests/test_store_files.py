"""The atomic write helpers shared by stores, trainer and sweep."""
from __future__ import annotations

import json
import os

import pytest

from imf.atomic import atomic_write_json, atomic_write_text


def test_atomic_write_text_replaces_and_keeps_mode(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    os.chmod(path, 0o640)
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_atomic_write_json_is_strict_json(tmp_path):
    path = tmp_path / "s.json"
    atomic_write_json(path, {"a": float("nan"), "b": [1.5, float("inf")], "p": tmp_path})
    assert json.loads(path.read_text()) == {"a": None, "b": [1.5, None], "p": str(tmp_path)}


def test_failed_write_leaves_old_file_and_no_temp(tmp_path):
    path = tmp_path / "s.json"
    atomic_write_json(path, {"ok": 1})
    with pytest.raises(TypeError):
        atomic_write_json(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"ok": 1}
    with pytest.raises(TypeError):
        atomic_write_text(path, 5)  # type: ignore[arg-type]
    assert json.loads(path.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


def _temp(folder, name: str, age_s: float):
    path = folder / name
    path.write_text("half")
    os.utime(path, (path.stat().st_atime - age_s, path.stat().st_mtime - age_s))
    return path


def test_a_store_removes_its_own_temps_under_its_lock_and_nothing_else(tmp_path):
    from imf.store.iteration_log import IterationLogStore
    from imf.store.scoreboard import ScoreboardStore
    # The store folder may be the user's (a trial's --out ./run records in the current folder).
    users = [_temp(tmp_path, ".notes.tmp", 120), _temp(tmp_path, ".draft.md.k2j3.tmp", 120),
             _temp(tmp_path, "notes.tmp", 120)]
    mine = _temp(tmp_path, ".scoreboard.json.zz1.tmp", 0)  # a writer killed a moment ago
    ScoreboardStore(tmp_path).record({"id": "a", "score": 0.5})
    assert not mine.exists()  # under the lock no other writer has a temp
    log_temp = _temp(tmp_path, ".ITERATION_LOG.md.q1.tmp", 0)
    IterationLogStore(tmp_path).record({"id": "a", "score": 0.5})
    assert not log_temp.exists()
    assert all(path.exists() for path in users)


def test_the_temp_file_and_its_folder_are_fsynced_before_the_rename(tmp_path, monkeypatch):
    import stat

    from imf import atomic as files
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(files.os, "fsync", lambda fd: (events.append(
        "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"), real_fsync(fd))[1])
    monkeypatch.setattr(files.os, "replace", lambda a, b: (events.append("rename"), real_replace(a, b))[1])
    atomic_write_text(tmp_path / "a.txt", "x")
    assert events.index("file") < events.index("rename") and events.index("dir") < events.index("rename")


@pytest.mark.parametrize("umask, mode", [(0o077, 0o600), (0o022, 0o644), (0o002, 0o664)])
def test_new_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write_json(tmp_path / "s.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "s.json").stat().st_mode & 0o777 == mode
