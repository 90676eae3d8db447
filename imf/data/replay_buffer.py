"""Replay-buffer zarr stores in the reference layout: read (v2 or v3, directory or zip), write.

Layout: data/img (N, 96, 96, 3), data/state (N, 5), data/action (N, 2), data/keypoint (N, 9, 2),
data/n_contacts (N, 1), meta/episode_ends (E,) exclusive ends. Everything is loaded into
memory; img is kept as uint8 (N, 96, 96, 3) whether the store holds uint8 or float32 0..255.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from imf.atomic import atomic_path, clean_stale_temps
from imf.errors import DataError

# name -> (shape after N, allowed dtype kinds: f float, u unsigned, i signed int)
ARRAY_SPECS: dict[str, tuple[tuple[int, ...], str]] = {
    "img": ((96, 96, 3), "fu"),
    "state": ((5,), "fiu"),
    "action": ((2,), "fiu"),
    "keypoint": ((9, 2), "fiu"),
    "n_contacts": ((1,), "fiu"),
}
IMAGE_TASK_ARRAYS = ("img", "state", "action")
KEYPOINT_TASK_ARRAYS = ("keypoint", "state", "action")
_READ_CHUNK = 2048  # frames per read, to bound the float32 -> uint8 peak memory
_WRITE_CHUNKS = 8  # chunks per write: the images' 256-frame chunks, 2048 frames a write


@dataclass
class ReplayBuffer:
    """In-memory replay buffer: arrays by name (all N long) and episode ends."""
    arrays: dict[str, np.ndarray]
    episode_ends: np.ndarray  # (E,) int64, exclusive
    path: str = ""
    zarr_format: int | None = field(default=None)

    @classmethod
    def open(cls, path: str | os.PathLike, required: tuple[str, ...] = IMAGE_TASK_ARRAYS,
             only_required: bool = False) -> "ReplayBuffer":
        """Read and check a store; any problem is a DataError naming the array or path.

        only_required=True leaves the other arrays on disk (a keypoint run needs no images).
        """
        group, fmt, closer = _open_group(Path(path))
        try:
            ends = _read_episode_ends(group, path)
            arrays = _read_arrays(group, path, required, int(ends[-1]), only_required)
        finally:
            closer()
        return cls(arrays=arrays, episode_ends=ends, path=str(path), zarr_format=fmt)

    @property
    def n_episodes(self) -> int:
        return int(len(self.episode_ends))

    @property
    def n_steps(self) -> int:
        return int(self.episode_ends[-1]) if len(self.episode_ends) else 0

    @property
    def episode_lengths(self) -> np.ndarray:
        return np.diff(np.concatenate([[0], self.episode_ends])).astype(np.int64)


def read_episode_ends(path: str | os.PathLike) -> np.ndarray:
    """Only meta/episode_ends of a store (cheap: no data arrays are read)."""
    group, _, closer = _open_group(Path(path))
    try:
        return _read_episode_ends(group, path)
    finally:
        closer()


def _open_group(path: Path):
    """(zarr group, zarr format, close function) for a directory or zip store."""
    import zarr
    if not path.exists():
        raise DataError(f"replay buffer '{path}' does not exist; give a .zarr directory or .zarr.zip file")
    store = None
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise DataError(f"'{path}' is not a zarr store: a file that is not a zip archive")
        store = zarr.storage.ZipStore(path, mode="r")
        target = store
    else:
        if not any((path / marker).exists() for marker in (".zgroup", "zarr.json")):
            raise DataError(f"'{path}' is not a zarr store: no .zgroup or zarr.json in the directory")
        target = str(path)
    try:
        group = zarr.open_group(target, mode="r")
    except Exception as exc:  # zarr raises several types for unreadable metadata
        if store is not None:
            store.close()
        raise DataError(f"'{path}' is not a readable zarr group: {exc}") from None
    fmt = getattr(group.metadata, "zarr_format", None)
    return group, fmt, (store.close if store is not None else (lambda: None))


def _member(group, name: str, path):
    """The array `name` of the store, or None when it has none."""
    try:
        arr = group[name]
    except KeyError:
        return None
    except Exception as exc:  # zarr raises several types for unreadable metadata
        raise DataError(f"'{path}' {name} has unreadable metadata: {exc}") from None
    if not hasattr(arr, "dtype"):
        raise DataError(f"'{path}' {name} is a group, not an array")
    return arr


def _load(arr, name: str, path, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Rows start:stop of a store's array, with finite values; corrupt chunks are DataErrors."""
    try:
        values = np.asarray(arr[start:stop])
    except Exception as exc:  # the codecs raise several types for corrupt chunks
        raise DataError(f"'{path}' {name} cannot be read ({type(exc).__name__}: {exc})") from None
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise DataError(f"'{path}' {name} holds NaN or infinite values")
    return values


def _read_episode_ends(group, path) -> np.ndarray:
    arr = _member(group, "meta/episode_ends", path)
    if arr is None:
        raise DataError(f"replay buffer '{path}' has no array 'meta/episode_ends'")
    ends = _load(arr, "meta/episode_ends", path)
    if ends.ndim != 1 or ends.dtype.kind not in "iu":
        raise DataError(f"'{path}' meta/episode_ends must be a 1-D integer array, "
                        f"got shape {ends.shape} dtype {ends.dtype}")
    if len(ends) == 0:
        raise DataError(f"'{path}' is empty: meta/episode_ends has no episodes")
    steps = np.diff(np.concatenate([[0], ends.astype(np.int64)]))
    if np.any(steps <= 0):
        bad = int(np.argmax(steps <= 0))
        raise DataError(f"'{path}' meta/episode_ends must be strictly increasing and positive; "
                        f"entry {bad} is {int(ends[bad])}")
    return ends.astype(np.int64)


def _read_arrays(group, path, required: tuple[str, ...], n_steps: int,
                 only_required: bool = False) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for name, (tail, kinds) in ARRAY_SPECS.items():
        if only_required and name not in required:
            continue
        arr = _member(group, f"data/{name}", path)
        if arr is None:
            if name in required:
                raise DataError(f"replay buffer '{path}' has no array 'data/{name}' "
                                f"(required: {', '.join('data/' + r for r in required)})") from None
            continue
        expected = (n_steps,) + tail
        if tuple(arr.shape) != expected:
            raise DataError(f"'{path}' data/{name} has shape {tuple(arr.shape)}; expected {expected} "
                            f"(N = meta/episode_ends[-1] = {n_steps})")
        if np.dtype(arr.dtype).kind not in kinds:
            raise DataError(f"'{path}' data/{name} has dtype {arr.dtype}; allowed kinds: "
                            f"{'float32 0..255 or uint8' if name == 'img' else 'float or int'}")
        arrays[name] = (_read_image(arr, path) if name == "img"
                        else _load(arr, f"data/{name}", path).astype(np.float32, copy=False))
    return arrays


def _read_image(arr, path) -> np.ndarray:
    """uint8 (N, 96, 96, 3) from uint8 or float 0..255 storage, read in chunks."""
    out = np.empty(arr.shape, dtype=np.uint8)
    for start in range(0, arr.shape[0], _READ_CHUNK):
        block = _load(arr, "data/img", path, start, start + _READ_CHUNK)
        if block.dtype != np.uint8:
            block = np.clip(np.rint(block), 0, 255)
        out[start:start + len(block)] = block
    return out


def prepare_output(path: str | os.PathLike) -> Path:
    """Check, before any work, that a store can be written at `path`: its folder is made and
    writable, and what is there already (to be replaced) is a zarr store, not any other file."""
    path = Path(path)
    if path.exists() and not _is_store(path):
        raise DataError(f"'{path}' exists and is not a zarr store; not replacing it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the folder of replay buffer '{path}': "
                        f"{exc.strerror or exc}: '{exc.filename}'") from None
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{path.name}.probe-", dir=path.parent))
    except OSError as exc:
        raise DataError(f"cannot write replay buffer '{path}': folder '{path.parent}' is not "
                        f"writable ({exc.strerror or exc})") from None
    return path


def _is_store(path: Path) -> bool:
    if path.is_dir():
        return any((path / marker).exists() for marker in (".zgroup", "zarr.json"))
    return zipfile.is_zipfile(path)


@dataclass(frozen=True)
class Column:
    """One array to write: its full shape and dtype, and its rows as consecutive blocks."""
    shape: tuple[int, ...]
    dtype: np.dtype
    blocks: Iterable[np.ndarray]

    @classmethod
    def of(cls, values: np.ndarray) -> "Column":
        return cls(tuple(values.shape), values.dtype, [values])

    @classmethod
    def joined(cls, parts: list[np.ndarray]) -> "Column":
        """The parts one after the other, as np.concatenate would give them, never joined in memory."""
        return cls((sum(len(p) for p in parts),) + parts[0].shape[1:], np.result_type(*parts), parts)


def write_replay_buffer(path: str | os.PathLike, arrays: dict[str, np.ndarray],
                        episode_ends: np.ndarray, zarr_format: int = 2) -> Path:
    """Write a directory store in the reference layout, atomically (imf.atomic: temp folder, rename).
    A zarr store already at `path` is replaced; anything else there is a DataError."""
    columns = {name: Column.of(np.asarray(values)) for name, values in arrays.items()}
    return write_columns(path, columns, episode_ends, zarr_format)


def write_episodes(path: str | os.PathLike, episodes: list[dict[str, np.ndarray]],
                   zarr_format: int = 2) -> Path:
    """``write_replay_buffer`` of the episodes' arrays joined in order, without holding a
    second copy of them in memory."""
    ends = np.cumsum([len(next(iter(ep.values()))) for ep in episodes])
    columns = {name: Column.joined([ep[name] for ep in episodes]) for name in episodes[0]}
    return write_columns(path, columns, ends, zarr_format)


def copy_episodes(source: str | os.PathLike, path: str | os.PathLike, n_episodes: int) -> Path:
    """Write the first ``n_episodes`` of the store at ``source`` to ``path``: the same arrays,
    dtypes, chunks and episode ends a store written afresh from those episodes has. Only the
    layout's arrays are copied; a block of frames at a time is read."""
    group, fmt, closer = _open_group(Path(source))
    try:
        ends = _read_episode_ends(group, source)
        if not 1 <= n_episodes <= len(ends):
            raise DataError(f"'{source}' has {len(ends)} episodes; cannot copy the first {n_episodes}")
        rows = int(ends[n_episodes - 1])
        columns = {}
        for name in ARRAY_SPECS:
            arr = _member(group, f"data/{name}", source)
            if arr is None:
                continue
            if arr.shape[0] < rows:
                raise DataError(f"'{source}' data/{name} has {arr.shape[0]} frames; its first "
                                f"{n_episodes} episodes need {rows}")
            columns[name] = Column((rows,) + tuple(arr.shape[1:]), np.dtype(arr.dtype),
                                   _frames(arr, f"data/{name}", source, rows))
        return write_columns(path, columns, ends[:n_episodes], fmt or 2)
    finally:
        closer()


def _frames(arr, name: str, path, rows: int) -> Iterator[np.ndarray]:
    for start in range(0, rows, _READ_CHUNK):
        yield _load(arr, name, path, start, min(start + _READ_CHUNK, rows))


def write_columns(path: str | os.PathLike, columns: dict[str, Column], episode_ends: np.ndarray,
                  zarr_format: int = 2) -> Path:
    """The writer behind the three above: every array chunked by the same rule, so a store is
    the same bytes whichever way its rows arrive."""
    import zarr
    ends = np.asarray(episode_ends, dtype=np.int64)
    _check_for_write({name: c.shape for name, c in columns.items()}, ends)
    path = prepare_output(path)
    clean_stale_temps(path.parent, only=(path.name,))  # a half store of a killed writer
    try:
        with atomic_path(path) as tmp:
            root = zarr.open_group(str(tmp), mode="w", zarr_format=zarr_format)
            data = root.require_group("data")
            for name, column in columns.items():
                chunk = min(column.shape[0], 1024 if name != "img" else 256)
                target = data.create_array(name, shape=column.shape, dtype=column.dtype,
                                           chunks=(chunk,) + column.shape[1:])
                _fill(target, column.blocks, chunk * _WRITE_CHUNKS)
            root.require_group("meta").create_array("episode_ends", data=ends, chunks=(max(len(ends), 1),))
    except OSError as exc:
        raise DataError(f"cannot write replay buffer '{path}': {exc.strerror or exc}") from None
    return path


def _fill(target, blocks: Iterable[np.ndarray], slab: int) -> None:
    """Write the blocks' rows in order, in slabs of whole chunks (no chunk is written twice)."""
    start, pending, held = 0, [], 0
    for block in blocks:
        pending.append(block)
        held += len(block)
        while held >= slab:
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            target[start:start + slab] = joined[:slab]
            start, rest = start + slab, joined[slab:]
            pending, held = ([rest] if len(rest) else []), len(rest)
    if held:
        target[start:start + held] = np.concatenate(pending) if len(pending) > 1 else pending[0]


def _check_for_write(shapes: dict[str, tuple[int, ...]], ends: np.ndarray) -> None:
    if ends.ndim != 1 or len(ends) == 0 or np.any(np.diff(np.concatenate([[0], ends])) <= 0):
        raise DataError("episode_ends must be a non-empty, strictly increasing 1-D array")
    for name, shape in shapes.items():
        if name not in ARRAY_SPECS:
            raise DataError(f"unknown replay-buffer array '{name}'; allowed: {', '.join(ARRAY_SPECS)}")
        expected = (int(ends[-1]),) + ARRAY_SPECS[name][0]
        if tuple(shape) != expected:
            raise DataError(f"array '{name}' has shape {tuple(shape)}; expected {expected}")
