"""imf/typed.py: the one reader of dataclass annotations (config values, summary.json, sweep.json)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from imf.typed import Kind, describe, field_kinds, fits, kind_of


@dataclass
class Inner:
    x: int = 0


@dataclass
class Sample:
    name: str
    count: int | None = None
    score: float = 0.0
    tags: list[str] = field(default_factory=list)
    inner: Inner | None = None
    items: list[Inner] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    anything: Any = None


def test_annotations_read_as_kinds():
    kinds = field_kinds(Sample)
    assert kinds["name"] == Kind(str)
    assert kinds["count"] == Kind(int, optional=True)
    assert kinds["tags"] == Kind(list, item=Kind(str))
    assert kinds["inner"] == Kind(Inner, optional=True) and kinds["inner"].stored is dict
    assert kinds["options"] == Kind(dict) and kinds["anything"] == Kind(object)


@pytest.mark.parametrize("value, key, ok", [
    ("a", "name", True), (None, "name", False), (1, "name", False),
    (3, "count", True), (None, "count", True), (True, "count", False), (2.0, "count", False),
    (1, "score", True), (0.5, "score", True), (False, "score", False),
    (["a"], "tags", True), ([1], "tags", False), ("a", "tags", False),
    ({"x": 1}, "inner", True), ([{"x": 1}], "items", True), ([1], "items", True),  # items: checked apart
    ({"k": [1]}, "options", True), (object(), "anything", True), (None, "anything", True),
])
def test_a_json_value_fits_its_kind_or_not(value, key, ok):
    assert fits(value, field_kinds(Sample)[key]) is ok


def test_kinds_in_words():
    kinds = field_kinds(Sample)
    assert describe(kinds["count"]) == "an int or null"
    assert describe(kinds["tags"]) == "a list of strings"
    assert describe(kinds["inner"]) == "an object or null"


def test_an_annotation_of_two_types_is_refused():
    with pytest.raises(TypeError, match="one type"):
        kind_of(int | str)
