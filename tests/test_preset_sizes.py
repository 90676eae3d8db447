"""benchmarks/speed/preset_sizes.py: bad arguments get one line, and the table reads the JSON it wrote."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "speed" / "preset_sizes.py"
sys.path.insert(0, str(SCRIPT.parent))

import preset_sizes  # noqa: E402


@pytest.mark.parametrize("args, says", [
    (["--cells", "64x"], "--cells '64x': give n_embxn_layer pairs"),
    (["--cells", "0x2"], "--cells '0x2'"),
    (["--cells", "64x2@big"], "--cells '64x2@big': give n_embxn_layer pairs, each with an optional @batch"),
    (["--cells", "64x2@0"], "--cells '64x2@0'"),
    (["--steps", "0"], "--steps 0 --rounds 5: both must be at least 1"),
    (["--tag", "../x"], "--tag '../x': give lower-case letters, digits and _"),
    (["--preset", "nope", "--steps", "1", "--rounds", "1"], "unknown preset 'nope'"),
])
def test_bad_arguments_get_one_line_and_write_nothing(args, says, monkeypatch):
    import torch

    before = {p: p.read_bytes() for p in ROOT.glob("benchmarks/preset_sizes_*.json")}
    monkeypatch.setattr(sys, "argv", ["preset_sizes.py", *args, "--no-write"])
    threads = torch.get_num_threads()  # main() sets one thread, as a timing run wants
    try:
        with pytest.raises(SystemExit) as done:
            preset_sizes.main()
    finally:
        torch.set_num_threads(threads)
    message = str(done.value.code)
    assert message.startswith("preset_sizes.py: ") and says in message and "\n" not in message
    assert {p: p.read_bytes() for p in ROOT.glob("benchmarks/preset_sizes_*.json")} == before


def test_the_table_gives_each_cell_against_the_presets_own_size():
    run = {"preset": "p", "own_size": [64, 2], "steps": 40, "rounds": 5,
           "machine": {"when": "2026-12-06 11:19 UTC", "arch": "x86_64", "torch": "2.13.0", "cores": 2,
                       "load_start": 1.0, "load_end": 1.5},
           "cells": [{"n_emb": 64, "n_layer": 2, "params": 169412, "batch": 64, "cpu_s_per_step": 0.0276,
                      "samples_per_cpu_s": 2322.0, "ratio_to_preset": 1.0},
                     {"n_emb": 128, "n_layer": 2, "params": 666500, "batch": 64, "cpu_s_per_step": 0.0512,
                      "samples_per_cpu_s": 1250.0, "ratio_to_preset": 0.538}]}
    lines = preset_sizes.render(run)
    assert lines[0] == preset_sizes.section("p")
    assert "--cells 64x2,128x2 --steps 40 --rounds 5" in lines[2]
    assert lines[-2:] == ["| 64x2 | 169,412 | 27.6 | 2,322 | 1.00x |", "| 128x2 | 666,500 | 51.2 | 1,250 | 0.54x |"]


def test_a_cell_at_another_batch_is_named_with_it_and_parsed_back():
    assert preset_sizes.parse_cells("64x2,64x2@128") == [(64, 2, None), (64, 2, 128)]
    machine = {"when": "w", "arch": "x86_64", "torch": "2.13.0", "cores": 2, "load_start": 1.0, "load_end": 1.0}
    run = {"preset": "p", "own_size": [64, 2], "steps": 40, "rounds": 5, "machine": machine,
           "cells": [{"n_emb": 64, "n_layer": 2, "params": 169412, "batch": 64, "cpu_s_per_step": 0.0276,
                      "samples_per_cpu_s": 2322.0, "ratio_to_preset": 1.0},
                     {"n_emb": 64, "n_layer": 2, "params": 169412, "batch": 128, "cpu_s_per_step": 0.045,
                      "samples_per_cpu_s": 2844.0, "ratio_to_preset": 1.225}]}
    lines = preset_sizes.render(run | {"tag": "batch"})
    assert lines[0] == preset_sizes.section("p", "batch") and lines[0].startswith("## Training samples a CPU-second of p at other sizes, batch (")
    assert "--cells 64x2,64x2@128 --steps 40 --rounds 5 --tag batch` " in lines[2]
    assert "JSON: benchmarks/preset_sizes_p_batch.json." in lines[2]
    assert lines[-1] == "| 64x2@128 | 169,412 | 45.0 | 2,844 | 1.23x |"
