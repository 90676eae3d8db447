"""The rollout scorer: per-seed max reward, success, the same scores whatever the workers."""
import math

import numpy as np
import pytest

from imf.errors import ImfError
from imf.pusht import geometry as geo
from imf.pusht.env import PushTEnv
from imf.pusht.scorer import score_policy


def drift_policy(obs):
    """Move each agent 6 units right and 4 down per step (a trivial, deterministic policy)."""
    pos = obs["agent_pos"][:, -1]  # (B, 2)
    steps = np.arange(1, 9)[None, :, None] * np.array([6.0, 4.0])  # (1, 8, 2)
    return pos[:, None, :] + steps


@pytest.mark.slow
def test_same_scores_in_process_and_with_workers():
    seeds = [100000, 100001, 100002, 100003]
    one = score_policy(drift_policy, seeds, max_steps=40, n_workers=1)
    two = score_policy(drift_policy, seeds, max_steps=40, n_workers=2)
    assert one.per_seed == two.per_seed and one.per_seed_success == two.per_seed_success
    assert one.mean_score == pytest.approx(np.mean(list(one.per_seed.values())))
    assert all(steps == 40 for steps in one.per_seed_steps.values())


def test_observation_batch_and_history_padding():
    seen = []

    def policy(obs):
        seen.append({k: v.copy() for k, v in obs.items()})
        return np.repeat(obs["agent_pos"][:, -1:], 8, axis=1)

    score_policy(policy, [1, 2, 3], max_steps=16, n_obs_steps=2, n_action_steps=8)
    first = seen[0]
    assert first["image"].shape == (3, 2, 3, 96, 96) and first["image"].dtype == np.float32
    assert first["agent_pos"].shape == (3, 2, 2)
    np.testing.assert_array_equal(first["image"][:, 0], first["image"][:, 1])  # padded by the first
    assert len(seen) == 2


def test_score_is_max_reward_of_each_episode():
    """A policy that stays put keeps the reset's reward for the whole episode."""
    def stay(obs):
        return np.repeat(obs["state"][:, -1:, :2], 8, axis=1)

    seeds = [100000, 100005]
    result = score_policy(stay, seeds, max_steps=16, obs_type="state", legacy=True)
    for seed in seeds:
        env = PushTEnv(legacy=True)
        _, info = env.reset(seed=seed)
        assert result.per_seed[seed] == pytest.approx(geo.reward_from_coverage(info["coverage"]), abs=1e-9)


def test_success_when_the_block_starts_on_the_goal(monkeypatch):
    goal = np.array([100.0, 100.0, 256.0, 256.0, math.pi / 4])
    monkeypatch.setattr(PushTEnv, "sample_reset_state", staticmethod(lambda seed: goal))
    result = score_policy(drift_policy, [0, 1], max_steps=8, legacy=False)
    assert result.success_rate == 1.0 and result.mean_score == 1.0


def test_non_finite_actions_hold_the_agent():
    seen = []

    def nan_policy(obs):
        seen.append(obs["agent_pos"][:, -1].copy())
        return np.full((len(obs["agent_pos"]), 8, 2), np.nan)

    result = score_policy(nan_policy, [3], max_steps=16)
    assert result.per_seed_steps[3] == 16 and len(seen) == 2
    np.testing.assert_allclose(seen[1], seen[0], atol=1e-3)  # the agent stayed where it was


def test_bad_policy_output_is_a_typed_error():
    with pytest.raises(ImfError, match="expected"):
        score_policy(lambda obs: np.zeros((1, 3, 2)), [0], max_steps=8)
    with pytest.raises(ImfError, match="not an array of numbers"):
        score_policy(lambda obs: [["left"] * 2] * 8, [0], max_steps=8, n_workers=2)


@pytest.mark.slow
def test_works_when_the_caller_holds_torch():
    import torch

    def torch_policy(obs):
        pos = torch.from_numpy(obs["agent_pos"][:, -1]).double()
        return pos[:, None, :].repeat(1, 8, 1)

    result = score_policy(torch_policy, [5, 6], max_steps=8, n_workers=2)
    assert set(result.per_seed) == {5, 6}


@pytest.mark.slow
def test_a_competent_policy_scores_high_and_a_trivial_one_low():
    """The scripted expert, replanned open-loop from each chunk's last state, as a policy."""
    import itertools

    from imf.pusht.planner import ScriptedExpert

    expert = ScriptedExpert()

    def expert_policy(obs):
        chunks = []
        for state in obs["state"][:, -1]:
            env = PushTEnv("state")
            env.set_state(state.astype(np.float64))
            chunk = list(itertools.islice(expert.actions(env), 8))
            chunks.append(chunk + [chunk[-1]] * (8 - len(chunk)))
        return np.array(chunks)

    seeds = list(range(100000, 100006))
    good = score_policy(expert_policy, seeds, obs_type="state", n_workers=2)
    bad = score_policy(drift_policy, seeds, obs_type="state", n_workers=2)
    assert good.mean_score > 0.6 and bad.mean_score < 0.3
    assert good.success_rate == np.mean(list(good.per_seed_success.values()))
