"""The simulator's seed ranges, each with one job, so that no number is chosen and claimed on
the same episodes:

- test seeds, ``eval.test_start_seed`` + 0..n_test-1 (``TEST_START``.. by default): scored
  during training; they choose the best checkpoint of a run (and ``eval.train_start_seed``..,
  ``TRAIN_START``.., the optional train rollouts);
- selection seeds, ``SELECTION``: the final checkpoint re-scored (``--final-eval N``, into final_eval.json)
  to choose between runs: the report's ranking, suggest, ``imf loop``'s conclusions, ensembles,
  ablation tables;
- holdout seeds, ``HOLDOUT``: only for claims (``imf eval CKPT --holdout``,
  ``imf trial --final-eval N --holdout``); every look is kept in the run's holdout.json;
- the scripted demonstrations, ``DEMO_START``.. (imf/pusht/expert.py), above all three.

A leaf anyone may import: the config's defaults, the checks of imf/config/eval_seeds.py, the
CLI's help and the report's legend all read the numbers here (tests/test_holdout.py holds the
ranges apart).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SeedRange:
    name: str  # "selection" or "holdout": what the episodes are for
    start: int
    max_episodes: int
    flag: str  # the option that asks for them, for messages

    @property
    def stop(self) -> int:
        return self.start + self.max_episodes

    @property
    def text(self) -> str:
        """"500000..": the range in help strings and legends."""
        return f"{self.start}.."


TEST_START = 100_000  # eval.test_start_seed's default
TRAIN_START = 0  # eval.train_start_seed's default
SELECTION = SeedRange("selection", 500_000, 300_000, "--final-eval")  # 500000..799999
HOLDOUT = SeedRange("holdout", 900_000, 100_000, "--holdout")  # 900000..999999
RANGES = (SELECTION, HOLDOUT)
DEMO_START = 1_000_000  # the scripted demonstrations' episode seeds start here
