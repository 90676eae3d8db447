"""``imf data info`` shows arrays as stored (dtype, shape, chunks, compressor) and unused ones."""
from __future__ import annotations

import numpy as np
import zarr
from typer.testing import CliRunner

from imf.cli import app
from imf.data.store_info import stored_arrays


def _float_image_store(path):
    """A v3 store as some converters write it: float32 0..255 images, an extra array."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    n = 6
    root.create_array("meta/episode_ends", data=np.array([2, 6], dtype=np.int64))
    root.create_array("data/img", data=np.full((n, 96, 96, 3), 200.0, np.float32), chunks=(4, 96, 96, 3))
    root.create_array("data/state", data=np.zeros((n, 5), np.float64), chunks=(3, 5))
    root.create_array("data/action", data=np.zeros((n, 2), np.float32))
    root.create_array("data/camera2", data=np.zeros((n, 8), np.float32))
    root.create_array("meta/notes", data=np.zeros((2,), np.int32))
    return path


def test_arrays_as_stored_and_unused_ones(tmp_path):
    path = _float_image_store(tmp_path / "f.zarr")
    arrays = {a.name: a for a in stored_arrays(path)}
    img = arrays["data/img"]
    assert (img.dtype, img.shape, img.chunks, img.read_as) == ("float32", (6, 96, 96, 3), (4, 96, 96, 3), "uint8")
    assert "Zstd" in img.compressor
    assert (arrays["data/state"].dtype, arrays["data/state"].read_as) == ("float64", "float32")
    assert arrays["data/camera2"].read_as == "" and arrays["meta/notes"].read_as == ""
    assert list(arrays)[-2:] == ["data/camera2", "meta/notes"]  # unused ones last


def test_cli_prints_them(tmp_path):
    path = _float_image_store(tmp_path / "f.zarr")
    result = CliRunner().invoke(app, ["data", "info", str(path)])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines() if line.startswith(("data/", "meta/"))}
    assert lines["data/img"].split()[1:6] == ["(6,", "96,", "96,", "3)", "float32"]
    assert "(4, 96, 96, 3)" in lines["data/img"] and lines["data/img"].endswith("uint8")
    assert lines["data/camera2"].endswith("(not used)") and lines["meta/notes"].endswith("(not used)")
    assert "episodes   2" in result.output


def test_a_missing_store_is_one_error(tmp_path):
    from imf.errors import DataError
    result = CliRunner().invoke(app, ["data", "info", str(tmp_path / "nope.zarr")])
    assert isinstance(result.exception, DataError) and "does not exist" in str(result.exception)
