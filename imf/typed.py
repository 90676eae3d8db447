"""A dataclass field's annotation read as the kind of value it holds: one reader for the config's
value rules, summary.json and sweep.json (a leaf anyone may import).

``kind_of(int | None)`` is ``Kind(int, optional=True)``; ``list[str]`` is ``Kind(list,
item=Kind(str))``; ``Any`` is ``Kind(object)``. ``fits`` says whether a JSON value is of a kind:
a bool is no number, an int is also a float, a dataclass is kept as a JSON object.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

_UNIONS = (typing.Union, types.UnionType)
_NAMES = {str: "a string", int: "an int", float: "a number", bool: "true or false", dict: "an object",
          list: "a list"}
_PLURALS = {str: "strings", int: "ints", float: "numbers", bool: "true or false values", dict: "objects"}


@dataclass(frozen=True)
class Kind:
    base: type  # str, int, float, bool, list, dict, a dataclass, or object (Any)
    optional: bool = False  # None (JSON null) is allowed
    item: "Kind | None" = None  # a list's items

    @property
    def stored(self) -> type:
        """The JSON type a value of this kind is kept as (a dataclass: an object)."""
        return dict if dataclasses.is_dataclass(self.base) else self.base


@functools.lru_cache(maxsize=None)
def kind_of(tp: Any) -> Kind:
    """The kind of the annotation ``tp`` (a resolved type, not a string)."""
    if tp is Any:
        return Kind(object)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in _UNIONS:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported annotation {tp}: one type, or one type | None")
        return dataclasses.replace(kind_of(inner[0]), optional=type(None) in args)
    if origin is list:
        return Kind(list, item=kind_of(args[0]) if args else Kind(object))
    if origin is dict or tp is dict:
        return Kind(dict)
    if isinstance(tp, type):
        return Kind(tp)
    raise TypeError(f"unsupported annotation {tp}")


@functools.lru_cache(maxsize=None)
def field_kinds(cls: type) -> dict[str, Kind]:
    """Every field of the dataclass ``cls`` by name, as its kind."""
    hints = typing.get_type_hints(cls)
    return {f.name: kind_of(hints[f.name]) for f in dataclasses.fields(cls)}


def fits(value: Any, kind: Kind) -> bool:
    """``value`` (read from JSON) is of ``kind``; a list's items too, but for a list of
    dataclasses, whose items the caller checks field by field (naming the item)."""
    if value is None:
        return kind.optional or kind.base is object
    base = kind.stored
    if base is object:
        return True
    if base in (int, float) and isinstance(value, bool):
        return False
    if not isinstance(value, (int, float) if base is float else base):
        return False
    if base is list and kind.item is not None and kind.item.stored is not object \
            and not dataclasses.is_dataclass(kind.item.base):
        return all(fits(v, dataclasses.replace(kind.item, optional=False)) for v in value)
    return True


def describe(kind: Kind) -> str:
    """The kind in words: "a string or null", "a list of ints"."""
    words = _NAMES.get(kind.stored, kind.stored.__name__)
    if kind.stored is list and kind.item is not None and kind.item.stored in _PLURALS:
        words = f"a list of {_PLURALS[kind.item.stored]}"
    return words + (" or null" if kind.optional else "")
