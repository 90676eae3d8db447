"""YAML presets: the files in imf/configs (or any path), ``base:`` inheritance, deep merges; a
key given twice in one mapping of a file is refused (``StrictLoader``). The preset ``imf trial``
and ``imf sweep`` use when none is named, and what ``--mask`` changes: ``mask_preset``,
``mask_overrides``."""
from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from imf.config.values import suggest as _suggest
from imf.errors import ConfigError

PRESET_DIR = Path(__file__).resolve().parent.parent / "configs"
DEFAULT_PRESET = "pusht_image_imf"  # imf trial and imf sweep without a CONFIG
FULL_MASK = "full"
FULL_ATTENTION_PRESET = "pusht_image_imf_fullattn"  # the spec's full-attention variant (n_head 1)


def mask_preset(mask: str | None) -> str:
    """The preset a sweep uses when none is named: ``--mask full`` means the full-attention one."""
    return FULL_ATTENTION_PRESET if mask == FULL_MASK else DEFAULT_PRESET


def mask_overrides(mask: str | None) -> list[str]:
    """What ``--mask NAME`` adds to every trial's overrides (nothing without it)."""
    return [f"policy.mask={mask}"] if mask else []


def list_presets() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def read_yaml(path: Path) -> dict[str, Any]:
    """The file's mapping (a fresh copy each call: callers merge into it)."""
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is None:
        return _parse_yaml(path, path.read_text())  # raises the OSError a caller reports
    return copy.deepcopy(_read_yaml_cached(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _read_yaml_cached(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """Parsed once per version of the file: a sweep of 10,000 trials builds 10,000 configs
    from one preset (the key is the file's mtime and size, so an edited file is read again)."""
    return _parse_yaml(Path(path), Path(path).read_text())


class RepeatedKey(yaml.YAMLError):
    """A key given twice in one mapping (PyYAML would keep the last one silently)."""

    def __init__(self, key: Any, line: int, first: int):
        super().__init__(f"line {line}: key '{key}' is given twice in one mapping (first at line {first})")
        self.key, self.line, self.first = key, line, first


class StrictLoader(yaml.SafeLoader):
    """``yaml.safe_load`` that refuses a key repeated in one mapping; a merge (``<<: *x``) may
    still be overridden by the mapping's own keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.setdefault(key, line)
            except TypeError:  # an unhashable key: SafeLoader says so itself
                continue
            if first != line:
                raise RepeatedKey(key, line, first)
        return super().construct_mapping(node, deep)


def load_yaml_text(text: str, source: Path | str) -> Any:
    """The YAML ``text`` of ``source`` (a file, for messages), a repeated key refused."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 (StrictLoader is a SafeLoader)
    except RepeatedKey as exc:
        raise ConfigError(f"config file {source}, line {exc.line}: key '{exc.key}' is given twice in one "
                          f"mapping (first at line {exc.first}); keep one") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {source}: not valid YAML ({str(exc).splitlines()[0]})") from None


def _parse_yaml(path: Path, text: str) -> dict[str, Any]:
    data = load_yaml_text(text, path) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: top level must be a mapping, got {type(data).__name__}")
    return data


def _resolve_preset_path(name_or_path: str, relative_to: Path | None = None) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if relative_to is not None and not candidate.is_absolute():
            local = relative_to / candidate
            if local.exists():
                return local
        if candidate.exists():
            return candidate
        shipped = PRESET_DIR / candidate.name
        if shipped.exists():
            return shipped
        raise ConfigError(f"config file '{name_or_path}' does not exist")
    shipped = PRESET_DIR / f"{name_or_path}.yaml"
    if shipped.exists():
        return shipped
    presets = list_presets()
    raise ConfigError(
        f"unknown preset '{name_or_path}'{_suggest(name_or_path, presets)}; "
        f"presets: {', '.join(presets)}; or give a path to a .yaml file")


def preset_base(name_or_path: str) -> str | None:
    """The ``base:`` a preset or YAML file names (None for a root preset)."""
    base = read_yaml(_resolve_preset_path(name_or_path, None)).get("base")
    return None if base is None else str(base)


def load_preset_dict(name_or_path: str, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """A preset as a nested dict with its ``base:`` chain merged in (child wins)."""
    path = _resolve_preset_path(name_or_path, Path(_seen[-1]).parent if _seen else None)
    if str(path.resolve()) in _seen:
        raise ConfigError(f"config file {path}: 'base:' chain loops back to itself")
    data = read_yaml(path)
    base = data.pop("base", None)
    if base is None:
        return data
    parent = load_preset_dict(str(base), _seen + (str(path.resolve()),))
    return deep_merge(parent, data)


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
