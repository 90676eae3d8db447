"""``imf data info``: a replay-buffer store as it is on disk, and how imf reads it."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from imf.data.replay_buffer import ARRAY_SPECS, ReplayBuffer, _open_group

EPISODE_ENDS = "meta/episode_ends"


@dataclass
class StoredArray:
    name: str  # path inside the store, e.g. data/img
    shape: tuple[int, ...]
    dtype: str
    chunks: tuple[int, ...]
    compressor: str  # the compression codecs, "none" without
    read_as: str  # what imf makes of it in memory; "" when imf does not use it


def _codecs(arr) -> str:
    codecs = [*getattr(arr, "filters", ()), *getattr(arr, "compressors", ())]
    return ", ".join(str(c) for c in codecs) or "none"


def _read_as(name: str) -> str:
    if name == EPISODE_ENDS:
        return "int64"
    short = name.removeprefix("data/")
    if not name.startswith("data/") or short not in ARRAY_SPECS:
        return ""
    return "uint8" if short == "img" else "float32"


def stored_arrays(path: str | os.PathLike) -> list[StoredArray]:
    """Every array of the store, nested ones included, with dtype, shape and chunks as stored."""
    group, _, close = _open_group(Path(path))
    try:
        found = [StoredArray(name, tuple(node.shape), str(node.dtype), tuple(node.chunks),
                             _codecs(node), _read_as(name))
                 for name, node in group.members(max_depth=None) if hasattr(node, "dtype")]
    finally:
        close()
    return sorted(found, key=lambda a: (a.read_as == "", a.name))


def describe_store(path: str | os.PathLike) -> str:
    """Episodes and lengths, then one line per stored array; arrays imf does not read are
    listed as unused."""
    buffer = ReplayBuffer.open(path, required=())  # checks every array imf reads
    lengths = buffer.episode_lengths
    lines = [f"store      {buffer.path} (zarr v{buffer.zarr_format})",
             f"episodes   {buffer.n_episodes}",
             f"steps      {buffer.n_steps}",
             f"lengths    min {lengths.min()}  mean {lengths.mean():.1f}  max {lengths.max()}",
             ""]
    rows = [("array", "shape", "dtype", "chunks", "compressor", "imf reads it as")]
    rows += [(a.name, str(a.shape), a.dtype, str(a.chunks), a.compressor, a.read_as or "(not used)")
             for a in stored_arrays(path)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)
