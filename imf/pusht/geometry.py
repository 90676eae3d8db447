"""The T block's geometry and the exact coverage of the goal T.

The T is the union of two disjoint convex boxes, so the area of (block T intersect goal T)
is the sum of the four box-box intersections, each an exact convex clip (no geometry
library). Everything here is plain Python floats: the polygons have four vertices and
numpy's per-call overhead would dominate.
"""
from __future__ import annotations

import functools
import math
from typing import Sequence

Point = tuple[float, float]

# Body-frame boxes of the T (origin = middle of the bar's outer edge, y down the stem).
BAR_BOX: tuple[Point, ...] = ((-60.0, 0.0), (60.0, 0.0), (60.0, 30.0), (-60.0, 30.0))
STEM_BOX: tuple[Point, ...] = ((-15.0, 30.0), (15.0, 30.0), (15.0, 120.0), (-15.0, 120.0))
T_BOXES: tuple[tuple[Point, ...], ...] = (BAR_BOX, STEM_BOX)
T_AREA = 120.0 * 30.0 + 30.0 * 90.0  # 6300
CENTER_OF_GRAVITY: Point = (0.0, 45.0)
GOAL_POSE: tuple[float, float, float] = (256.0, 256.0, math.pi / 4)
SUCCESS_COVERAGE = 0.95
# Radius about the origin that holds every T vertex (for a cheap overlap pre-check).
T_RADIUS = math.hypot(15.0, 120.0)
# Nine keypoints of the T in the body frame (the reference's keypoint array has 9 x 2).
T_KEYPOINTS: tuple[Point, ...] = ((-60.0, 0.0), (60.0, 0.0), (60.0, 30.0), (15.0, 30.0),
                                  (15.0, 120.0), (-15.0, 120.0), (-15.0, 30.0), (-60.0, 30.0),
                                  (0.0, 45.0))


def place(points: Sequence[Point], pose: Sequence[float]) -> list[Point]:
    """Body-frame points -> world points for a pose (x, y, angle) of the body origin."""
    x, y, angle = pose
    c, s = math.cos(angle), math.sin(angle)
    return [(x + c * px - s * py, y + s * px + c * py) for px, py in points]


def t_polygons(pose: Sequence[float]) -> list[list[Point]]:
    """The two world-frame boxes of a T at `pose`, vertices in body-frame order."""
    return [place(box, pose) for box in T_BOXES]


def polygon_area(poly: Sequence[Point]) -> float:
    """Signed shoelace area (positive for the T boxes' vertex order in y-down coordinates)."""
    n = len(poly)
    total = 0.0
    for i in range(n):
        x0, y0 = poly[i]
        x1, y1 = poly[(i + 1) % n]
        total += x0 * y1 - x1 * y0
    return total / 2.0


def _clip(subject: list[Point], a: Point, b: Point) -> list[Point]:
    """Keep the part of `subject` on the inner side of the directed edge a -> b."""
    ax, ay = a
    ex, ey = b[0] - ax, b[1] - ay
    out: list[Point] = []
    n = len(subject)
    for i in range(n):
        px, py = subject[i - 1]
        qx, qy = subject[i]
        dp = ex * (py - ay) - ey * (px - ax)
        dq = ex * (qy - ay) - ey * (qx - ax)
        if dq >= 0.0:
            if dp < 0.0:
                t = dp / (dp - dq)
                out.append((px + t * (qx - px), py + t * (qy - py)))
            out.append((qx, qy))
        elif dp >= 0.0:
            t = dp / (dp - dq)
            out.append((px + t * (qx - px), py + t * (qy - py)))
    return out


def convex_intersection_area(p: Sequence[Point], q: Sequence[Point]) -> float:
    """Exact area of the intersection of two convex polygons (both with positive area)."""
    poly = list(p)
    n = len(q)
    for i in range(n):
        poly = _clip(poly, q[i], q[(i + 1) % n])
        if len(poly) < 3:
            return 0.0
    return abs(polygon_area(poly))


@functools.lru_cache(maxsize=4)
def _goal_polygons(goal_pose: tuple[float, float, float]) -> list[list[Point]]:
    """The goal T's boxes: the goal never moves, so they are placed once (read-only)."""
    return t_polygons(goal_pose)


def coverage(block_pose: Sequence[float], goal_pose: Sequence[float] = GOAL_POSE) -> float:
    """area(block T intersect goal T) / area(goal T), exactly."""
    if math.hypot(block_pose[0] - goal_pose[0], block_pose[1] - goal_pose[1]) > 2 * T_RADIUS:
        return 0.0
    goal = _goal_polygons(tuple(goal_pose))
    area = 0.0
    for bp in t_polygons(block_pose):
        for gp in goal:
            area += convex_intersection_area(bp, gp)
    return area / T_AREA


def reward_from_coverage(cov: float) -> float:
    """The reference reward: clip(coverage / 0.95, 0, 1)."""
    return min(max(cov / SUCCESS_COVERAGE, 0.0), 1.0)
