"""Reading replay-buffer zarr stores: the reference v2 layout, v3, zip; and bad data."""
import shutil
import zipfile

import numpy as np
import pytest
import zarr

from imf.data.replay_buffer import ReplayBuffer, write_replay_buffer
from imf.data.store_info import describe_store
from imf.errors import DataError

ENDS = np.array([4, 9, 15], dtype=np.int64)


def _reference_arrays(n=15, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "img": rng.integers(0, 256, size=(n, 96, 96, 3)).astype(np.float32),  # float32 0..255
        "state": rng.uniform(0, 512, size=(n, 5)).astype(np.float32),
        "action": rng.uniform(0, 512, size=(n, 2)).astype(np.float32),
        "keypoint": rng.uniform(0, 512, size=(n, 9, 2)).astype(np.float32),
        "n_contacts": rng.integers(0, 3, size=(n, 1)).astype(np.float32),
    }


def _write_store(path, arrays, ends=ENDS, zarr_format=2, skip=(), **array_options):
    """A store built by hand with zarr itself, exactly in the reference's layout and dtypes."""
    root = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    data = root.require_group("data")
    for name, values in arrays.items():
        if name not in skip:
            data.create_array(name, data=values, chunks=(5,) + values.shape[1:], **array_options)
    root.require_group("meta").create_array("episode_ends", data=np.asarray(ends))
    return path


def test_reads_the_reference_v2_layout(tmp_path):
    arrays = _reference_arrays()
    path = _write_store(tmp_path / "pusht_cchi_v7_replay.zarr", arrays)
    assert (path / ".zgroup").exists()
    buf = ReplayBuffer.open(path)
    assert buf.zarr_format == 2
    assert buf.n_episodes == 3 and buf.n_steps == 15
    np.testing.assert_array_equal(buf.episode_lengths, [4, 5, 6])
    assert buf.arrays["img"].dtype == np.uint8
    np.testing.assert_array_equal(buf.arrays["img"], arrays["img"].astype(np.uint8))
    for name in ("state", "action", "keypoint", "n_contacts"):
        np.testing.assert_array_equal(buf.arrays[name], arrays[name])
    text = describe_store(path)
    assert "episodes   3" in text and "(15, 96, 96, 3)" in text


def test_reads_blosc_compressed_v2(tmp_path):
    from numcodecs import Blosc
    arrays = _reference_arrays()
    buf = ReplayBuffer.open(_write_store(tmp_path / "b.zarr", arrays, compressors=Blosc(cname="lz4", clevel=5)))
    np.testing.assert_array_equal(buf.arrays["keypoint"], arrays["keypoint"])


def test_reads_v3_and_uint8_images(tmp_path):
    arrays = _reference_arrays()
    arrays["img"] = arrays["img"].astype(np.uint8)
    buf = ReplayBuffer.open(_write_store(tmp_path / "v3.zarr", arrays, zarr_format=3))
    assert buf.zarr_format == 3
    np.testing.assert_array_equal(buf.arrays["img"], arrays["img"])


def test_reads_a_zipped_store(tmp_path):
    folder = _write_store(tmp_path / "x.zarr", _reference_arrays())
    archive = tmp_path / "x.zarr.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in folder.rglob("*"):
            if file.is_file():
                zf.write(file, file.relative_to(folder).as_posix())
    buf = ReplayBuffer.open(archive)
    assert buf.n_steps == 15 and buf.arrays["img"].shape == (15, 96, 96, 3)


def test_write_then_read_round_trip(tmp_path):
    arrays = _reference_arrays()
    arrays["img"] = arrays["img"].astype(np.uint8)
    path = write_replay_buffer(tmp_path / "out.zarr", arrays, ENDS)
    buf = ReplayBuffer.open(path)
    for name, values in arrays.items():
        np.testing.assert_array_equal(buf.arrays[name], values)
    assert not list(tmp_path.glob(".*tmp*"))


def _with(arrays, **changed):
    return {**arrays, **changed}


@pytest.mark.parametrize("change, match", [
    (lambda a: {"skip": ("action",)}, "data/action"),
    (lambda a: {"arrays": _with(a, state=a["state"][:, :4])}, r"data/state has shape \(15, 4\)"),
    (lambda a: {"ends": [4, 9, 14]}, "data/img has shape"),  # length mismatch with episode_ends
    (lambda a: {"arrays": _with(a, action=np.array([["a", "b"]] * 15))}, "data/action has dtype"),
    (lambda a: {"arrays": _with(a, action=np.full((15, 2), np.nan, np.float32))}, "data/action holds NaN"),
    (lambda a: {"arrays": _with(a, img=np.full((15, 96, 96, 3), np.inf, np.float32))}, "data/img holds NaN"),
    (lambda a: {"ends": [9, 4, 15]}, "episode_ends must be strictly increasing"),
    (lambda a: {"arrays": {k: v[:0] for k, v in a.items()}, "ends": np.zeros(0, dtype=np.int64)}, "empty"),
], ids=["missing", "shape", "length", "dtype", "nan", "inf-image", "ends-order", "empty"])
def test_bad_store_is_a_data_error_naming_the_problem(tmp_path, change, match):
    arrays = _reference_arrays()
    with pytest.raises(DataError, match=match):
        ReplayBuffer.open(_write_store(tmp_path / "s.zarr", **{"arrays": arrays, **change(arrays)}))


def _corrupt_chunks(path):
    for chunk in (path / "data" / "state").glob("[0-9]*"):
        chunk.write_bytes(b"xx")


def _corrupt_metadata(path):
    (path / "data" / "action" / ".zarray").write_text("{not json")


def _group_for_array(path):
    shutil.rmtree(path / "data" / "img")
    zarr.open_group(str(path), mode="a").require_group("data/img")


@pytest.mark.parametrize("damage, match", [(_corrupt_chunks, "data/state cannot be read"),
                                           (_corrupt_metadata, "data/action has unreadable metadata"),
                                           (_group_for_array, "data/img is a group")])
def test_damaged_store_is_a_data_error(tmp_path, damage, match):
    path = _write_store(tmp_path / "s.zarr", _reference_arrays())
    damage(path)
    with pytest.raises(DataError, match=match):
        ReplayBuffer.open(path)


def test_paths_that_are_not_stores(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        ReplayBuffer.open(tmp_path / "nothing.zarr")
    with pytest.raises(DataError, match="not a zarr store"):
        ReplayBuffer.open(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(DataError, match="not a zarr store"):
        ReplayBuffer.open(text)


def test_writer_rejects_bad_input_and_leaves_nothing(tmp_path):
    arrays = _reference_arrays()
    with pytest.raises(DataError, match="strictly increasing"):
        write_replay_buffer(tmp_path / "w.zarr", arrays, [4, 4, 15])
    with pytest.raises(DataError, match="'state' has shape"):
        write_replay_buffer(tmp_path / "w.zarr", {"state": arrays["state"][:3]}, ENDS)
    assert list(tmp_path.iterdir()) == []


def test_writer_replaces_a_store_but_nothing_else(tmp_path):
    arrays = {k: v for k, v in _reference_arrays().items() if k != "img"}
    store = _write_store(tmp_path / "old.zarr", _reference_arrays())
    write_replay_buffer(store, arrays, ENDS)
    assert "img" not in ReplayBuffer.open(store, required=()).arrays
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "keep.txt").write_text("precious")
    with pytest.raises(DataError, match="not a zarr store; not replacing it"):
        write_replay_buffer(folder, arrays, ENDS)
    assert (folder / "keep.txt").read_text() == "precious"


def test_writer_under_a_file_is_a_data_error(tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(DataError, match="cannot create the folder"):
        write_replay_buffer(tmp_path / "afile" / "w.zarr", _reference_arrays(), ENDS)
