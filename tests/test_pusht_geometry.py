"""Exact coverage of the goal T: hand-computed cases and a sampled cross-check."""
import math

import numpy as np
import pytest

from imf.pusht import geometry as geo


def _shifted(pose, dx, dy):
    """`pose` moved by (dx, dy) given in the pose's own body frame."""
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return (pose[0] + c * dx - s * dy, pose[1] + s * dx + c * dy, pose[2])


def test_t_area_is_6300():
    assert geo.T_AREA == 6300
    assert sum(geo.polygon_area(p) for p in geo.t_polygons(geo.GOAL_POSE)) == pytest.approx(6300)


def test_goal_pose_has_full_coverage():
    assert geo.coverage(geo.GOAL_POSE) == pytest.approx(1.0, abs=1e-12)
    assert geo.reward_from_coverage(geo.coverage(geo.GOAL_POSE)) == 1.0


@pytest.mark.parametrize("dx, dy, expected", [
    # the stem's width sideways: the bars overlap 90 x 30, the stems only touch
    (30.0, 0.0, 90 * 30 / 6300),
    # half the T's width: bars overlap 60 x 30
    (60.0, 0.0, 60 * 30 / 6300),
    # the whole T's width: the bars only touch
    (120.0, 0.0, 0.0),
    # the bar's height down the stem: block bar on goal stem 30 x 30, stems 60 x 30
    (0.0, 30.0, (30 * 30 + 60 * 30) / 6300),
])
def test_shifted_pose_partial_coverage_by_hand(dx, dy, expected):
    assert geo.coverage(_shifted(geo.GOAL_POSE, dx, dy)) == pytest.approx(expected, abs=1e-12)


def test_reward_clips_coverage_over_095():
    assert geo.reward_from_coverage(0.5) == pytest.approx(0.5 / 0.95)
    assert geo.reward_from_coverage(0.97) == 1.0


def _sampled_coverage(pose, n=400):
    """Coverage by counting grid points inside both Ts (a slow, independent estimate)."""
    xs = np.linspace(100, 412, n)
    gx, gy = np.meshgrid(xs, xs)

    def inside(p):
        c, s = math.cos(p[2]), math.sin(p[2])
        dx, dy = gx - p[0], gy - p[1]
        lx, ly = c * dx + s * dy, -s * dx + c * dy
        bar = (np.abs(lx) <= 60) & (ly >= 0) & (ly <= 30)
        stem = (np.abs(lx) <= 15) & (ly >= 30) & (ly <= 120)
        return bar | stem

    goal = inside(geo.GOAL_POSE)
    return (goal & inside(pose)).sum() / goal.sum()


@pytest.mark.parametrize("pose", [(266.0, 250.0, 0.9), (240.0, 270.0, 0.3), (256.0, 256.0, 3.0)])
def test_coverage_matches_sampled_estimate(pose):
    assert geo.coverage(pose) == pytest.approx(_sampled_coverage(pose), abs=0.01)
