"""The loader paths a GPU run takes, exercised on a CPU: worker processes, pinned memory and
non-blocking copies (the last two only towards a CUDA device)."""
from __future__ import annotations

import json

import pytest
import torch

from imf.config import load_config
from imf.train.data import make_loader
from imf.train.step import to_device


class Leaf:
    """A batch leaf that records how it was moved."""

    def __init__(self):
        self.moves = []

    def to(self, device, non_blocking=False):
        self.moves.append((str(device), non_blocking))
        return self


def test_copies_are_non_blocking_only_to_cuda():
    for device, expected in ((torch.device("cpu"), False), (torch.device("cuda"), True)):
        leaf = Leaf()
        to_device({"obs": {"image": leaf}}, device)
        assert leaf.moves == [(str(device), expected)]


def test_the_loader_pins_memory_only_for_cuda_and_takes_its_workers():
    cfg = load_config("smoke", ["training.num_workers=2"])
    data = torch.utils.data.TensorDataset(torch.arange(10.0))
    cpu = make_loader(data, cfg, shuffle=True, generator=torch.Generator(), device=torch.device("cpu"))
    cuda = make_loader(data, cfg, shuffle=True, generator=torch.Generator(), device=torch.device("cuda"))
    assert (cpu.pin_memory, cuda.pin_memory) == (False, True)
    assert cpu.num_workers == 2 and cpu.persistent_workers


@pytest.mark.slow
def test_two_loader_workers_give_the_losses_of_none(demo_cache, tmp_path):
    from test_train_trial import run, tiny
    logs = {}
    for workers in (0, 2):
        cfg = tiny(demo_cache, "training.num_epochs=3", f"training.num_workers={workers}",
                   "training.rollout_every=3", "logging.stores=none")
        assert run(cfg, tmp_path / f"w{workers}")["status"] == "completed"
        rows = [json.loads(line) for line in (tmp_path / f"w{workers}" / "logs.json.txt").read_text().splitlines()]
        logs[workers] = [(r["epoch"], r["global_step"], r["train_loss"], r["val_loss"]) for r in rows]
    assert len(logs[0]) == 3 and logs[2] == logs[0]
