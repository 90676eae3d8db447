"""The simulator's seed ranges, each with one job, so that no number is chosen and claimed on
the same episodes:

- test seeds, ``eval.test_start_seed`` + 0..n_test-1 (100000.. by default): scored during
  training; they choose the best checkpoint of a run (and ``eval.train_start_seed``.., 0..,
  the optional train rollouts);
- selection seeds, ``SELECTION`` (500000..): best.pt re-scored (``--final-eval N``, into
  final_eval.json) to choose between runs: the report's ranking, suggest, ``imf loop``'s
  conclusions, ensembles, ablation tables;
- holdout seeds, ``HOLDOUT`` (900000..): only for claims (``imf eval CKPT --holdout``,
  ``imf trial --final-eval N --holdout``); every look is kept in the run's holdout.json.

The scripted demonstrations start at seed 1_000_000 (imf/pusht/expert.py), above all three
(tests/test_eval_seeds.py holds the ranges apart).
A config whose own rollout seeds would overlap the range asked for is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

from imf.config.schema import EvalConfig
from imf.errors import ConfigError

RECOMMENDED_EPISODES = 200  # SE of a 0..1 mean score <= 0.5/sqrt(200) ~ 0.035


@dataclass(frozen=True)
class SeedRange:
    name: str  # "selection" or "holdout": what the episodes are for
    start: int
    max_episodes: int
    flag: str  # the option that asks for them, for messages

    @property
    def stop(self) -> int:
        return self.start + self.max_episodes


SELECTION = SeedRange("selection", 500_000, 300_000, "--final-eval")  # 500000..799999
HOLDOUT = SeedRange("holdout", 900_000, 100_000, "--holdout")  # 900000..999999
RANGES = (SELECTION, HOLDOUT)


def check_episodes(n: int, flag: str = "--final-eval", seeds: SeedRange = SELECTION) -> int:
    """``n`` when it is a usable number of episodes of ``seeds``, else ConfigError."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= seeds.max_episodes:
        raise ConfigError(f"{flag} {n}: the number of {seeds.name} episodes must be an integer from 1 "
                          f"to {seeds.max_episodes} ({RECOMMENDED_EPISODES} recommended)")
    return n


def seeds_of(seeds: SeedRange, n: int, eval_cfg: EvalConfig, flag: str | None = None) -> list[int]:
    """The first N seeds of ``seeds``, checked disjoint from the test and train rollout seeds of
    ``eval_cfg`` (a config may move those anywhere)."""
    flag = flag or seeds.flag
    check_episodes(n, flag, seeds)
    start = seeds.start
    used = (("test", "eval.test_start_seed", eval_cfg.test_start_seed, eval_cfg.n_test),
            ("train", "eval.train_start_seed", eval_cfg.train_start_seed, eval_cfg.n_train))
    for name, key, first, count in used:
        if count > 0 and first < start + n and start < first + count:
            raise ConfigError(f"{flag} {n}: its {seeds.name} seeds {start}..{start + n - 1} overlap "
                              f"the {name} rollout seeds {first}..{first + count - 1} ({key}); move "
                              f"{key} out of that range")
    return list(range(start, start + n))


def final_eval_seeds(n: int, eval_cfg: EvalConfig, flag: str = "--final-eval") -> list[int]:
    """The N selection seeds of ``--final-eval N``."""
    return seeds_of(SELECTION, n, eval_cfg, flag)


def holdout_seeds(n: int, eval_cfg: EvalConfig, flag: str = "--holdout") -> list[int]:
    """The N holdout seeds: for claims only."""
    return seeds_of(HOLDOUT, n, eval_cfg, flag)
