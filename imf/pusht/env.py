"""PushTEnv: the reference PushT simulator on pymunk >= 7, with a gymnasium-style API."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pymunk

from imf.data import keypoint_obs
from imf.errors import ImfError
from imf.pusht import geometry as geo

WORLD_SIZE = 512.0
WALLS = (((5, 506), (5, 5)), ((5, 5), (506, 5)), ((506, 5), (506, 506)), ((5, 506), (506, 506)))
WALL_RADIUS = 2.0
AGENT_RADIUS = 15.0
BLOCK_MASS = 1.0
BLOCK_MOMENT = 3000.0  # the reference's value (it counts the bar's moment twice)
SIM_DT = 0.01
SUBSTEPS = 10
K_P, K_V = 100.0, 20.0
OBS_TYPES = ("state", "image", "keypoints")


class PushTEnv:
    """Push a T onto its goal pose with a kinematic disc; 10 Hz control, 100 Hz physics.

    obs_type "state": float32 (5,) agent x, y, block x, y, angle mod 2 pi.
    obs_type "image": {"image": float32 (3, 96, 96) in [0, 1], "agent_pos": float32 (2,)}.
    obs_type "keypoints": float32 (20,) the T's 9 keypoints (x, y) then the agent (x, y)
    (imf.data.lowdim.keypoint_obs, the same function the training data goes through).
    legacy=True sets the block position before its angle at reset (the reference's test
    rollouts), so the origin moves by the rotation about the centre of gravity.
    """

    def __init__(self, obs_type: str = "state", legacy: bool = False, render_size: int = 96,
                 max_episode_steps: int | None = None, count_contacts: bool = True) -> None:
        if obs_type not in OBS_TYPES:
            raise ImfError(f"PushTEnv obs_type '{obs_type}' is unknown; allowed: {', '.join(OBS_TYPES)}")
        self.obs_type = obs_type
        self.legacy = legacy
        self.render_size = render_size
        self.max_episode_steps = max_episode_steps
        self.count_contacts = count_contacts  # info["n_contacts"]; planners can skip the cost
        self.goal_pose = geo.GOAL_POSE
        self._seed_rng = np.random.default_rng()  # seeds for reset(seed=None)
        self._renderer = None
        self.n_contacts = 0
        self.elapsed_steps = 0
        self._build_space()

    # ----- world -------------------------------------------------------------------------
    def _build_space(self) -> None:
        space = pymunk.Space()
        space.gravity = (0.0, 0.0)
        space.damping = 0.0
        for a, b in WALLS:
            wall = pymunk.Segment(space.static_body, a, b, WALL_RADIUS)
            wall.friction = 0.0
            wall.elasticity = 0.0
            space.add(wall)
        agent = pymunk.Body(body_type=pymunk.Body.KINEMATIC)
        agent_shape = pymunk.Circle(agent, AGENT_RADIUS)
        agent_shape.friction = 0.0
        agent_shape.elasticity = 0.0
        block = pymunk.Body(BLOCK_MASS, BLOCK_MOMENT)
        block.center_of_gravity = geo.CENTER_OF_GRAVITY
        block_shapes = [pymunk.Poly(block, box) for box in geo.T_BOXES]
        for shape in block_shapes:
            shape.friction = 0.0
            shape.elasticity = 0.0
        space.add(agent, agent_shape, block, *block_shapes)
        if self.count_contacts:
            space.on_collision(post_solve=self._count_contacts)
        self.space, self.agent, self.block = space, agent, block

    def _count_contacts(self, arbiter: pymunk.Arbiter, space: pymunk.Space, data: Any) -> None:
        self.n_contacts += len(arbiter.contact_point_set.points)

    # ----- state -------------------------------------------------------------------------
    @property
    def block_pose(self) -> tuple[float, float, float]:
        pos = self.block.position
        return (pos.x, pos.y, self.block.angle)

    @property
    def agent_pos(self) -> tuple[float, float]:
        pos = self.agent.position
        return (pos.x, pos.y)

    def get_state(self) -> np.ndarray:
        """float64 (5,): agent x, y, block x, y, block angle (not wrapped)."""
        ax, ay = self.agent_pos
        bx, by, angle = self.block_pose
        return np.array([ax, ay, bx, by, angle])

    def set_state(self, state: Sequence[float], agent_vel: Sequence[float] = (0.0, 0.0)) -> None:
        """Restore a state exactly: the angle first, then the position (no physics step)."""
        values = _finite_vector(state, 5, "state")
        self.agent.position = (values[0], values[1])
        self.agent.velocity = (float(agent_vel[0]), float(agent_vel[1]))
        self.block.angle = values[4]
        self.block.position = (values[2], values[3])
        self.block.velocity = (0.0, 0.0)
        self.block.angular_velocity = 0.0
        self.space.reindex_shapes_for_body(self.block)
        self.space.reindex_shapes_for_body(self.agent)

    @staticmethod
    def sample_reset_state(seed: int) -> np.ndarray:
        """The reference reset distribution: a fresh RandomState(seed), Gaussian angle."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
            raise ImfError(f"PushT reset seed must be an integer in [0, 2**32), got {seed!r}")
        rs = np.random.RandomState(seed=seed)
        return np.array([rs.randint(50, 450), rs.randint(50, 450),
                         rs.randint(100, 400), rs.randint(100, 400),
                         rs.randn() * 2 * np.pi - np.pi], dtype=np.float64)

    # ----- gymnasium API -----------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        """New episode. options={"reset_to_state": 5 floats} restores that state exactly."""
        self._build_space()
        self.elapsed_steps = 0
        self.n_contacts = 0
        if options and options.get("reset_to_state") is not None:
            self.set_state(options["reset_to_state"])
        else:
            if seed is None:
                seed = int(self._seed_rng.integers(0, 2**31 - 1))
            self._apply_reset_state(self.sample_reset_state(seed))
        cov = geo.coverage(self.block_pose, self.goal_pose)
        return self._observation(), self._info(cov)

    def _apply_reset_state(self, state: np.ndarray) -> None:
        self.agent.position = (state[0], state[1])
        if self.legacy:
            self.block.position = (state[2], state[3])
            self.block.angle = state[4]
        else:
            self.block.angle = state[4]
            self.block.position = (state[2], state[3])
        self.space.step(SIM_DT)

    def step(self, action: Sequence[float] | None, observe: bool = True) -> tuple[Any, float, bool, bool, dict]:
        """Drive the agent toward the target `action` (world units) for one control step.

        observe=False returns None for the observation (a caller that will not look at it
        saves the rendering).
        """
        self.n_contacts = 0
        if action is not None:
            tx, ty = _finite_vector(action, 2, "action")
            for _ in range(SUBSTEPS):
                self.substep(tx, ty)
        self.elapsed_steps += 1
        cov = geo.coverage(self.block_pose, self.goal_pose)
        terminated = cov > geo.SUCCESS_COVERAGE
        truncated = self.max_episode_steps is not None and self.elapsed_steps >= self.max_episode_steps
        obs = self._observation() if observe else None
        return obs, geo.reward_from_coverage(cov), terminated, truncated, self._info(cov)

    def substep(self, tx: float, ty: float) -> None:
        """One physics sub-step of the PD law that drives the agent toward (tx, ty)."""
        agent = self.agent
        pos, vel = agent.position, agent.velocity
        agent.velocity = (vel.x + (K_P * (tx - pos.x) - K_V * vel.x) * SIM_DT,
                          vel.y + (K_P * (ty - pos.y) - K_V * vel.y) * SIM_DT)
        self.space.step(SIM_DT)

    # ----- observations --------------------------------------------------------------------
    def _observation(self) -> Any:
        if self.obs_type == "state":
            ax, ay = self.agent_pos
            bx, by, angle = self.block_pose
            return np.array([ax, ay, bx, by, angle % (2 * math.pi)], dtype=np.float32)
        if self.obs_type == "keypoints":
            return keypoint_obs(self.keypoints(), self.agent_pos)
        agent_pos = self.agent_pos  # read once: this runs every control step
        return {"image": self._get_renderer().render(agent_pos, self.block_pose),
                "agent_pos": np.array(agent_pos, dtype=np.float32)}

    def _info(self, cov: float) -> dict:
        vel = self.agent.velocity
        return {"pos_agent": np.array(self.agent_pos), "vel_agent": np.array((vel.x, vel.y)),
                "block_pose": np.array(self.block_pose), "goal_pose": np.array(self.goal_pose),
                "n_contacts": self.n_contacts, "coverage": cov,
                "is_success": cov > geo.SUCCESS_COVERAGE}

    def _get_renderer(self):
        if self._renderer is None:
            from imf.pusht.render import Renderer
            self._renderer = Renderer(self.render_size, self.goal_pose)
        return self._renderer

    def render_obs_image(self) -> np.ndarray:
        """float32 (3, S, S) in [0, 1], the policy's view (S = render_size, 96 by default)."""
        return self._get_renderer().render(self.agent_pos, self.block_pose)

    def render(self, size: int = 512) -> np.ndarray:
        """uint8 (size, size, 3) frame for people."""
        from imf.pusht.render import render_frame
        return render_frame(self.agent_pos, self.block_pose, self.goal_pose, size)

    def keypoints(self) -> np.ndarray:
        """float32 (9, 2): the T's keypoints in the world (the replay buffer's keypoint array)."""
        return np.array(geo.place(geo.T_KEYPOINTS, self.block_pose), dtype=np.float32)

    def close(self) -> None:
        self._renderer = None


def _finite_vector(values: Sequence[float], size: int, what: str) -> list[float]:
    try:
        out = [float(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]
    except (TypeError, ValueError):
        raise ImfError(f"PushT {what} must be {size} numbers, got {values!r}") from None
    if len(out) != size or not all(math.isfinite(v) for v in out):
        raise ImfError(f"PushT {what} must be {size} finite numbers, got {out!r}")
    return out
