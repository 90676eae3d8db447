"""The scripted expert's controller: greedy simulated pushes with mouse-like targets.

Each decision simulates a straight push along the inward normal of points on the T's outer
faces (frictionless, quasi-static: the block's pose depends only on how deep the agent has
gone, so one simulation per contact point gives every push depth), and picks the push whose
result is closest to the goal (`pose_error`), with a small charge per control step. The
agent then travels to the push's start around a safe circle, pushes, settles and replans.
A pace above 1 scales the push speed and the target step by it: the same plan, carried out in
fewer control steps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

from imf.pusht import geometry as geo
from imf.pusht.env import AGENT_RADIUS, SUBSTEPS, WORLD_SIZE, PushTEnv

MAX_TARGET_STEP = 30.0   # world units between consecutive targets ("mouse-like")
PUSH_SPEED = 20.0        # units per control step while pushing
APPROACH_GAP = 3.0       # free space between the agent and the face at the push's start
MIN_PUSH = 0.3           # shallowest push considered, past contact
MAX_DEPTH = 110.0        # deepest push simulated, past the start
SAFE_RADIUS = 112.0      # circle about the CoG the agent travels on to change sides
ANGLE_SCALE = 60.0       # units of error per radian (about the T's radius of gyration)
STEP_CHARGE = 0.003      # cost per control step, as a fraction of the current error


def _contact_candidates() -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """(body-frame contact point, inward unit normal) on the T's outer faces."""
    out = [((x, 0.0), (0.0, 1.0)) for x in (-55.0, -40.0, -22.0, -8.0, 8.0, 22.0, 40.0, 55.0)]
    for y in (5.0, 15.0, 25.0):
        out += [((60.0, y), (-1.0, 0.0)), ((-60.0, y), (1.0, 0.0))]
    for x in (33.0, 50.0):
        out += [((x, 30.0), (0.0, -1.0)), ((-x, 30.0), (0.0, -1.0))]
    for y in (48.0, 70.0, 92.0, 112.0):
        out += [((15.0, y), (-1.0, 0.0)), ((-15.0, y), (1.0, 0.0))]
    out += [((x, 120.0), (0.0, -1.0)) for x in (-10.0, 0.0, 10.0)]
    return out


CANDIDATES = _contact_candidates()


def pose_error(pose, goal_pose=geo.GOAL_POSE) -> float:
    """Distance to the goal in units: CoG offset and wrapped angle x ANGLE_SCALE, combined.

    Linear in the angle (not in its sine, as corner distances are), so a T upside down still
    sees every turn toward the goal as progress.
    """
    (gx, gy), (hx, hy) = _cog(goal_pose), _cog(pose)
    dtheta = (pose[2] - goal_pose[2] + math.pi) % (2 * math.pi) - math.pi
    return math.sqrt((hx - gx) ** 2 + (hy - gy) ** 2 + (ANGLE_SCALE * dtheta) ** 2)


@dataclass
class Push:
    start: tuple[float, float]       # agent centre before contact (world)
    normal: tuple[float, float]      # push direction (world, unit)
    depth: float                     # agent travel past `start`
    predicted_error: float
    cost: float


def _rotate(v, angle):
    c, s = math.cos(angle), math.sin(angle)
    return (c * v[0] - s * v[1], s * v[0] + c * v[1])


class PushPlanner:
    """Simulates candidate pushes on a private copy of the world."""

    def __init__(self, goal_pose=geo.GOAL_POSE, pace: float = 1.0) -> None:
        self.sim = PushTEnv("state", count_contacts=False)
        self.goal_pose = goal_pose
        self.push_speed, self.target_step = PUSH_SPEED * pace, MAX_TARGET_STEP * pace

    def simulate_push(self, pose, start, normal, best_known: float) -> tuple[float, float]:
        """(best error, the depth that reaches it) along one straight push from `start`."""
        sim = self.sim
        sim.set_state((start[0], start[1], pose[0], pose[1], pose[2]))
        agent = sim.agent
        best_err, best_depth = math.inf, 0.0
        target_depth = 0.0
        while target_depth < MAX_DEPTH + self.push_speed:
            target_depth = min(target_depth + self.push_speed, MAX_DEPTH)
            tx, ty = start[0] + normal[0] * target_depth, start[1] + normal[1] * target_depth
            for _ in range(SUBSTEPS):
                sim.substep(tx, ty)
                depth = (agent.position.x - start[0]) * normal[0] + (agent.position.y - start[1]) * normal[1]
                if depth < APPROACH_GAP + MIN_PUSH:
                    continue
                bpos = sim.block.position
                err = pose_error((bpos.x, bpos.y, sim.block.angle), self.goal_pose)
                if err < best_err:
                    best_err, best_depth = err, depth
                elif err > best_err + 20.0 and err > best_known + 20.0:
                    return best_err, best_depth
            if target_depth >= MAX_DEPTH:
                break
        return best_err, best_depth

    def plan(self, agent_pos, pose) -> Push | None:
        """The best push from this state, or None when no push is possible."""
        current = pose_error(pose, self.goal_pose)
        best: Push | None = None
        best_error: Push | None = None
        for contact, normal_b in CANDIDATES:
            cw = geo.place([contact], pose)[0]
            nw = _rotate(normal_b, pose[2])
            start = (cw[0] - nw[0] * (AGENT_RADIUS + APPROACH_GAP),
                     cw[1] - nw[1] * (AGENT_RADIUS + APPROACH_GAP))
            if not (0.0 <= start[0] <= WORLD_SIZE and 0.0 <= start[1] <= WORLD_SIZE):
                continue
            err, depth = self.simulate_push(pose, start, nw, best.predicted_error if best else current)
            if depth <= 0.0:
                continue
            steps = len(route(agent_pos, start, nw, pose, self.target_step)) + depth / self.push_speed + 2
            cost = err + STEP_CHARGE * current * steps
            push = Push(start, nw, depth, err, cost)
            if best is None or cost < best.cost:
                best = push
            if best_error is None or err < best_error.predicted_error:
                best_error = push
        if best is not None and best.predicted_error >= current:
            return best_error  # the step charge must not stop all progress
        return best


# ----- travelling around the block -----------------------------------------------------------
def _cog(pose) -> tuple[float, float]:
    return geo.place([geo.CENTER_OF_GRAVITY], pose)[0]


def _clear(a, b, pose, margin: float = AGENT_RADIUS + 2.0) -> bool:
    """True when a disc moving from a to b stays `margin` away from the T."""
    length = math.hypot(b[0] - a[0], b[1] - a[1])
    n = max(int(length / 4.0), 1)
    c, s = math.cos(pose[2]), math.sin(pose[2])
    for i in range(n + 1):
        t = i / n
        dx = a[0] + (b[0] - a[0]) * t - pose[0]
        dy = a[1] + (b[1] - a[1]) * t - pose[1]
        lx, ly = c * dx + s * dy, -s * dx + c * dy
        for (x0, y0), _, (x1, y1), _ in geo.T_BOXES:
            ox = max(x0 - lx, 0.0, lx - x1)
            oy = max(y0 - ly, 0.0, ly - y1)
            if ox * ox + oy * oy < margin * margin:
                return False
    return True


def _densify(points, first, max_step: float) -> list[tuple[float, float]]:
    out, here = [], first
    for p in points:
        dist = math.hypot(p[0] - here[0], p[1] - here[1])
        n = max(int(math.ceil(dist / max_step)), 1)
        out += [(here[0] + (p[0] - here[0]) * k / n, here[1] + (p[1] - here[1]) * k / n)
                for k in range(1, n + 1)]
        here = p
    return out


def route(agent_pos, start, normal, pose, max_step: float = MAX_TARGET_STEP) -> list[tuple[float, float]]:
    """Targets (at most ``max_step`` apart) that bring the agent to `start` around the T."""
    agent_pos = tuple(agent_pos)
    if _clear(agent_pos, start, pose):
        return _densify([start], agent_pos, max_step)
    gx, gy = _cog(pose)
    ax, ay = agent_pos[0] - gx, agent_pos[1] - gy
    a_angle = math.atan2(ay, ax)
    exit_point = (gx + SAFE_RADIUS * math.cos(a_angle), gy + SAFE_RADIUS * math.sin(a_angle))
    # where the push's line meets the safe circle, outside the block
    sx, sy = start[0] - gx, start[1] - gy
    proj = sx * normal[0] + sy * normal[1]
    disc = proj * proj - (sx * sx + sy * sy - SAFE_RADIUS ** 2)
    t = proj + math.sqrt(max(disc, 0.0))
    entry = (start[0] - normal[0] * t, start[1] - normal[1] * t)
    e_angle = math.atan2(entry[1] - gy, entry[0] - gx)
    sweep = (e_angle - a_angle + math.pi) % (2 * math.pi) - math.pi
    n_arc = max(int(abs(sweep) * SAFE_RADIUS / max_step), 1)
    arc = [(gx + SAFE_RADIUS * math.cos(a_angle + sweep * k / n_arc),
            gy + SAFE_RADIUS * math.sin(a_angle + sweep * k / n_arc)) for k in range(1, n_arc + 1)]
    return _densify([exit_point] + arc + [entry, start], agent_pos, max_step)


# ----- the controller ------------------------------------------------------------------------
class ScriptedExpert:
    """Yields one target per control step for the env it watches; ``pace`` scales its speeds."""

    def __init__(self, goal_pose=geo.GOAL_POSE, pace: float = 1.0) -> None:
        self.planner = PushPlanner(goal_pose, pace)

    def actions(self, env: PushTEnv) -> Iterator[tuple[float, float]]:
        """Targets inside the arena [0, 512]^2, like a mouse in the reference's window."""
        for x, y in self._targets(env):
            yield (min(max(x, 0.0), WORLD_SIZE), min(max(y, 0.0), WORLD_SIZE))

    def _targets(self, env: PushTEnv) -> Iterator[tuple[float, float]]:
        while True:
            pose = env.block_pose
            push = self.planner.plan(env.agent_pos, pose)
            if push is None:
                return
            yield from route(env.agent_pos, push.start, push.normal, pose, self.planner.target_step)
            yield from self._settle(env, push.start, tol=2.0, max_steps=4)
            n = max(int(math.ceil(push.depth / self.planner.push_speed)), 1)
            for k in range(1, n + 1):
                d = push.depth * k / n
                yield (push.start[0] + push.normal[0] * d, push.start[1] + push.normal[1] * d)
            end = (push.start[0] + push.normal[0] * push.depth, push.start[1] + push.normal[1] * push.depth)
            tol = min(max(0.03 * push.predicted_error, 0.2), 5.0)
            yield from self._settle(env, end, tol=tol, max_steps=8)

    @staticmethod
    def _settle(env: PushTEnv, target, tol: float, max_steps: int) -> Iterator[tuple[float, float]]:
        for _ in range(max_steps):
            ax, ay = env.agent_pos
            if math.hypot(ax - target[0], ay - target[1]) <= tol:
                return
            yield target
