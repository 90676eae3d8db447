"""The simulator seeds of the final evaluation (``--final-eval N``): a range no selection saw.

Training's rollouts score on ``eval.test_start_seed`` + 0..n_test-1 (100000.. by default; the
best checkpoint is *selected* on them) and ``eval.train_start_seed`` + 0..n_train-1 (0..);
the scripted demonstrations start at seed 1_000_000 (imf/pusht/expert.py). The final
evaluation re-scores the best checkpoint on ``FINAL_EVAL_START_SEED`` + 0..N-1, between the two,
and refuses a config whose own rollout seeds would overlap it.
"""
from __future__ import annotations

from imf.config.schema import EvalConfig
from imf.errors import ConfigError

FINAL_EVAL_START_SEED = 500_000
FINAL_EVAL_MAX_EPISODES = 400_000  # 500000..899999 stays below the demonstrations' seeds
RECOMMENDED_EPISODES = 200  # SE of a 0..1 mean score <= 0.5/sqrt(200) ~ 0.035


def check_episodes(n: int, flag: str = "--final-eval") -> int:
    """``n`` when it is a usable number of final-evaluation episodes, else ConfigError."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= FINAL_EVAL_MAX_EPISODES:
        raise ConfigError(f"{flag} {n}: the number of fresh episodes must be an integer from 1 to "
                          f"{FINAL_EVAL_MAX_EPISODES} ({RECOMMENDED_EPISODES} recommended)")
    return n


def final_eval_seeds(n: int, eval_cfg: EvalConfig, flag: str = "--final-eval") -> list[int]:
    """The N fresh seeds, checked disjoint from the test and train rollout seeds of ``eval_cfg``."""
    check_episodes(n, flag)
    start = FINAL_EVAL_START_SEED
    used = (("test", "eval.test_start_seed", eval_cfg.test_start_seed, eval_cfg.n_test),
            ("train", "eval.train_start_seed", eval_cfg.train_start_seed, eval_cfg.n_train))
    for name, key, first, count in used:
        if count > 0 and first < start + n and start < first + count:
            raise ConfigError(f"{flag} {n}: its seeds {start}..{start + n - 1} overlap the {name} "
                              f"rollout seeds {first}..{first + count - 1} ({key}); move {key} "
                              f"out of that range")
    return list(range(start, start + n))
