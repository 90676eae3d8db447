"""The goal T as the reference rasterises it on its 512 x 512 canvas.

The reference places the block's two boxes at the goal pose, rounds each world vertex to a
whole pixel (Python's round, via pymunk.pygame_util.to_pygame) and fills each box with
pygame.draw.polygon. pygame's fill scans the rows from the top vertex to the bottom one; on
each row every non-horizontal edge that spans it (its upper end included, its lower end
excluded, except on the polygon's last row) crosses at x_top + (y - y_top) * dx / dy with C's
integer division (toward zero), the crossings are sorted and the pixels from each odd one to
the next even one are set, both ends included. Horizontal edges strictly between the top and
bottom rows are set too. That is 6,450 pixels for the goal T; exact rational coordinates
would give 6,324.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from imf.pusht import geometry as geo


def fill_polygon(points: Sequence[tuple[int, int]], size: int) -> np.ndarray:
    """bool (size, size) canvas, [y, x], of the polygon with integer vertices ``points``."""
    mask = np.zeros((size, size), dtype=bool)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    top, bottom = min(ys), max(ys)
    if top == bottom:
        _span(mask, top, min(xs), max(xs))
        return mask
    edges = []  # (y_top, y_bottom, x_top, x_bottom) of every non-horizontal edge
    for (xa, ya), (xb, yb) in zip(zip(xs, ys), zip(xs[1:] + xs[:1], ys[1:] + ys[:1])):
        if ya != yb:
            edges.append((ya, yb, xa, xb) if ya < yb else (yb, ya, xb, xa))
        elif top < ya < bottom:
            _span(mask, ya, min(xa, xb), max(xa, xb))
    for y in range(top, bottom + 1):
        cross = sorted(x0 + _c_div((y - y0) * (x1 - x0), y1 - y0) for y0, y1, x0, x1 in edges
                       if y0 <= y < y1 or y == y1 == bottom)
        for left, right in zip(cross[::2], cross[1::2]):
            _span(mask, y, left, right)
    return mask


def _c_div(num: int, den: int) -> int:
    """Integer division rounding toward zero, as C's (den > 0)."""
    return num // den if num >= 0 else -((-num) // den)


def _span(mask: np.ndarray, y: int, left: int, right: int) -> None:
    size = mask.shape[0]
    if 0 <= y < size and right >= 0 and left < size:
        mask[y, max(left, 0):min(right, size - 1) + 1] = True


@functools.lru_cache(maxsize=4)
def goal_canvas(goal_pose: tuple[float, float, float], size: int = 512) -> np.ndarray:
    """bool (size, size) [y, x]: the canvas pixels of the goal T (read-only)."""
    mask = np.zeros((size, size), dtype=bool)
    for box in geo.T_BOXES:
        mask |= fill_polygon([(round(x), round(y)) for x, y in geo.place(box, goal_pose)], size)
    mask.setflags(write=False)
    return mask


def goal_mask(xs: np.ndarray, ys: np.ndarray, goal_pose: Sequence[float]) -> np.ndarray:
    """Whether canvas points (world coordinates, any shape) lie on a goal pixel: the pixel
    of a point is (floor(x), floor(y)); points off the canvas are not."""
    canvas = goal_canvas(tuple(float(v) for v in goal_pose))
    col, row = np.floor(xs).astype(np.int64), np.floor(ys).astype(np.int64)
    size = canvas.shape[0]
    inside = (col >= 0) & (col < size) & (row >= 0) & (row < size)
    return inside & canvas[np.clip(row, 0, size - 1), np.clip(col, 0, size - 1)]
