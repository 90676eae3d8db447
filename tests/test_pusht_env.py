"""PushTEnv matches the spec's numbers: world, reset distribution, legacy flag, control, API."""
import math

import numpy as np
import pytest

from imf.errors import ImfError
from imf.pusht import geometry as geo
from imf.pusht.env import PushTEnv


def origin_after_legacy_rotation(position, angle: float) -> tuple[float, float]:
    """Where the block's origin ends when its position is set first and its angle second:
    Chipmunk rotates about the centre of gravity c, so origin = pos + c - R(angle) c."""
    cx, cy = geo.CENTER_OF_GRAVITY
    c, s = math.cos(angle), math.sin(angle)
    return (position[0] + cx - (c * cx - s * cy), position[1] + cy - (s * cx + c * cy))


def test_legacy_origin_formula_keeps_cog_fixed():
    pos, angle = (200.0, 300.0), 1.1
    origin = origin_after_legacy_rotation(pos, angle)
    cog = geo.place([geo.CENTER_OF_GRAVITY], (origin[0], origin[1], angle))[0]
    assert cog == pytest.approx((pos[0], pos[1] + 45.0))


def test_world_constants():
    env = PushTEnv()
    assert env.block.mass == 1.0 and env.block.moment == 3000.0
    assert tuple(env.block.center_of_gravity) == (0.0, 45.0)
    assert env.space.damping == 0.0 and tuple(env.space.gravity) == (0.0, 0.0)
    assert all(shape.friction == 0.0 and shape.elasticity == 0.0 for shape in env.space.shapes)
    assert env.agent.body_type == env.agent.KINEMATIC
    walls = [s for s in env.space.shapes if s.body is env.space.static_body]
    assert len(walls) == 4 and all(w.radius == 2 for w in walls)
    assert env.goal_pose == (256.0, 256.0, math.pi / 4)


def test_reset_of_seed_100000_is_reproducible_and_follows_the_distribution():
    rs = np.random.RandomState(100000)
    draws = [rs.randint(50, 450), rs.randint(50, 450), rs.randint(100, 400), rs.randint(100, 400),
             rs.randn() * 2 * np.pi - np.pi]
    a, b = PushTEnv(legacy=True), PushTEnv(legacy=True)
    obs_a, _ = a.reset(seed=100000)
    obs_b, _ = b.reset(seed=100000)
    np.testing.assert_array_equal(obs_a, obs_b)
    state = a.get_state()
    assert state[:2] == pytest.approx(draws[:2])
    assert state[2:4] == pytest.approx(origin_after_legacy_rotation(draws[2:4], draws[4]), abs=1e-9)
    assert state[4] == pytest.approx(draws[4])


@pytest.mark.parametrize("seed", [100000, 100001, 100003, 7])
def test_legacy_and_non_legacy_resets_differ_by_the_cog_rotation(seed):
    legacy, plain = PushTEnv(legacy=True), PushTEnv(legacy=False)
    legacy.reset(seed=seed)
    plain.reset(seed=seed)
    draws = PushTEnv.sample_reset_state(seed)
    if min(legacy.n_contacts, plain.n_contacts) > 0:
        pytest.skip("agent starts touching the block")
    assert plain.get_state()[2:4] == pytest.approx(draws[2:4], abs=1e-9)
    c, s = math.cos(draws[4]), math.sin(draws[4])
    shift = (0.0 - (c * 0.0 - s * 45.0), 45.0 - (s * 0.0 + c * 45.0))  # c - R c
    expected = plain.get_state()[2:4] + np.array(shift)
    assert legacy.get_state()[2:4] == pytest.approx(expected, abs=1e-9)
    assert legacy.get_state()[4] == pytest.approx(plain.get_state()[4])


def test_goal_state_has_coverage_one_and_terminates():
    env = PushTEnv()
    goal = [100.0, 100.0, 256.0, 256.0, math.pi / 4]
    _, info = env.reset(options={"reset_to_state": goal})
    assert info["coverage"] == pytest.approx(1.0, abs=1e-9)
    _, reward, terminated, truncated, info = env.step(None)
    assert reward == 1.0 and terminated and not truncated and info["is_success"]


def test_set_state_restores_exactly():
    env = PushTEnv()
    env.reset(seed=3)
    state = np.array([120.5, 300.25, 200.0, 210.0, 2.5])
    env.set_state(state)
    np.testing.assert_allclose(env.get_state(), state, atol=1e-12)


def test_pd_control_brings_the_agent_to_the_target():
    env = PushTEnv()
    env.reset(options={"reset_to_state": [60.0, 60.0, 400.0, 400.0, 0.0]})
    env.step((90.0, 60.0))
    # one control step: 10 sub-steps of the PD law, integrated by hand
    pos, vel = 60.0, 0.0
    for _ in range(10):
        vel += (100.0 * (90.0 - pos) - 20.0 * vel) * 0.01
        pos += vel * 0.01
    assert env.agent_pos[0] == pytest.approx(pos, abs=1e-9)
    for _ in range(20):
        env.step((90.0, 60.0))
    assert env.agent_pos == pytest.approx((90.0, 60.0), abs=0.05)


def test_observations_and_info():
    env = PushTEnv("state")
    obs, info = env.reset(seed=11)
    assert obs.shape == (5,) and obs.dtype == np.float32 and 0 <= obs[4] < 2 * math.pi
    assert {"coverage", "is_success", "block_pose", "n_contacts"} <= set(info)
    img_env = PushTEnv("image")
    obs, _ = img_env.reset(seed=11)
    assert obs["image"].shape == (3, 96, 96) and obs["image"].dtype == np.float32
    assert 0.0 <= obs["image"].min() and obs["image"].max() <= 1.0
    assert obs["agent_pos"].shape == (2,)


def test_pushing_the_block_counts_contacts_and_moves_it():
    env = PushTEnv()
    env.reset(options={"reset_to_state": [256.0, 150.0, 256.0, 200.0, 0.0]})
    contacts = 0
    for _ in range(5):
        _, _, _, _, info = env.step((256.0, 230.0))
        contacts += info["n_contacts"]
    assert contacts > 0 and env.block_pose[1] > 200.0


def test_same_actions_same_trajectory():
    rng = np.random.default_rng(0)
    actions = rng.uniform(100, 400, size=(30, 2))
    runs = []
    for _ in range(2):
        env = PushTEnv()
        env.reset(seed=5)
        runs.append([env.step(a)[0] for a in actions])
    np.testing.assert_array_equal(np.array(runs[0]), np.array(runs[1]))


@pytest.mark.parametrize("action", [(np.nan, 1.0), (1.0, np.inf), (1.0,), (1.0, 2.0, 3.0), 5.0, "left", {"x": 1}])
def test_bad_action_is_a_typed_error(action):
    env = PushTEnv()
    env.reset(seed=0)
    with pytest.raises(ImfError, match="action must be 2"):
        env.step(action)


@pytest.mark.parametrize("seed", [-1, 2**32, "abc", 1.5, True])
def test_bad_seed_is_a_typed_error(seed):
    with pytest.raises(ImfError, match="seed must be an integer"):
        PushTEnv().reset(seed=seed)


def test_unknown_obs_type():
    with pytest.raises(ImfError, match="obs_type"):
        PushTEnv("pixels")
