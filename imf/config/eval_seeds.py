"""The checks on the simulator's seed ranges (the ranges themselves: imf/seeds.py): how many
selection or holdout episodes may be asked for, and which seeds they are. A config whose own
rollout seeds would overlap the range asked for is refused.
"""
from __future__ import annotations

from imf.config.schema import EvalConfig
from imf.errors import ConfigError
from imf.seeds import HOLDOUT, SELECTION, SeedRange

RECOMMENDED_EPISODES = 200  # SE of a 0..1 mean score <= 0.5/sqrt(200) ~ 0.035


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
