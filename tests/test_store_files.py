"""The atomic write helpers shared by stores, trainer and sweep."""
from __future__ import annotations

import json
import os

import pytest

from imf.store import atomic_write_json, atomic_write_text


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
