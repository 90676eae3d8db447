"""Rendering PushT the way the reference data looks, straight into small images.

The reference draws on a 512 x 512 canvas (one unit = one pixel) and resizes to 96 x 96 with
bilinear interpolation, which reads two canvas pixels per output pixel and axis. This
renderer evaluates exactly those canvas points from the shapes (no canvas is drawn) and
blends them with the same weights. The walls and the goal never move: their image is made
once. The block and the agent are blended on top inside their bounding boxes; the block's
layer is reused while the block does not move.
"""
from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from imf.pusht import geometry as geo

CANVAS = 512
WHITE = (255.0, 255.0, 255.0)
GOAL_GREEN = (144.0, 238.0, 144.0)          # LightGreen
BLOCK_EDGE = (119.0, 136.0, 153.0)          # LightSlateGray
BLOCK_FILL = (142.0, 163.0, 183.0)          # LightSlateGray x 1.2, as ints
AGENT_OUTER = (65.0, 105.0, 225.0)          # RoyalBlue
AGENT_INNER = (78.0, 126.0, 255.0)          # RoyalBlue x 1.2, capped
WALL_GRAY = (211.0, 211.0, 211.0)           # LightGray
EDGE_RADIUS = 2.0                           # the block's outline: fat segments of radius 2
WALL_RADIUS = 2.0
AGENT_RADIUS, AGENT_INNER_RADIUS = 15.0, 11.0
AGENT_QUANT = 1  # the reference draws at integer pixels: agent sprites every canvas unit
_FILL = np.asarray(BLOCK_FILL, dtype=np.float32)[:, None, None] / 255.0
_EDGE_MINUS_FILL = (np.asarray(BLOCK_EDGE, dtype=np.float32)[:, None, None] - _FILL * 255.0) / 255.0
WALL_SEGMENTS = (((5, 506), (5, 5)), ((5, 5), (506, 5)), ((506, 5), (506, 506)),
                 ((5, 506), (506, 506)))


# ----- what colour each canvas point has (arrays of world points, any equal shapes) ------
def _to_body(xs: np.ndarray, ys: np.ndarray, pose: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x, y, angle = pose
    c, s = math.cos(angle), math.sin(angle)
    dx, dy = xs - x, ys - y
    return c * dx + s * dy, -s * dx + c * dy


def _box_masks(lx: np.ndarray, ly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(drawn at all, drawn in the edge colour) for body-frame points of the T.

    Each box is filled and outlined by a band of EDGE_RADIUS on both sides of its sides (the
    reference's fat segments; their 2-unit round caps are drawn square here).
    """
    covered = np.zeros(lx.shape, dtype=bool)
    edge = np.zeros(lx.shape, dtype=bool)
    for (x0, y0), _, (x1, y1), _ in geo.T_BOXES:
        ax = np.abs(lx - (x0 + x1) / 2) - (x1 - x0) / 2  # > 0 outside along x
        ay = np.abs(ly - (y0 + y1) / 2) - (y1 - y0) / 2
        far = np.maximum(ax, ay)
        near = far <= EDGE_RADIUS
        covered |= near
        edge |= near & (far >= -EDGE_RADIUS)
    return covered, edge


# The T's boxes grown by the outline's band and shrunk by it: (4, 1) bounds in the body frame.
_BANDS = [(box, grow) for box in geo.T_BOXES for grow in (EDGE_RADIUS, -EDGE_RADIUS)]
_BAND_X = np.array([[[b[0][0] - g], [b[2][0] + g]] for b, g in _BANDS]).transpose(1, 0, 2)
_BAND_Y = np.array([[[b[0][1] - g], [b[2][1] + g]] for b, g in _BANDS]).transpose(1, 0, 2)


def _row_intervals(coef: float, offset: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Per band and row, the dx with lo <= coef * dx + offset <= hi: (left, right) (4, rows)."""
    if abs(coef) < 1e-12:
        inside = (offset >= lo) & (offset <= hi)
        return np.where(inside, -np.inf, np.inf), np.where(inside, np.inf, -np.inf)
    a, b = (lo - offset) / coef, (hi - offset) / coef
    return np.minimum(a, b), np.maximum(a, b)


def t_row_masks(dxs: np.ndarray, dys: np.ndarray, angle: float) -> np.ndarray:
    """`_box_masks` on the grid dys x dxs (offsets from the block origin, dxs ascending).

    Returns float32 (2, rows, cols) of 0/1: (drawn at all, in the outline). A rotated box
    meets each row in one interval, i.e. an index range of the sorted taps, so each mask is
    two small-integer comparisons instead of a dozen float operations per point.
    """
    c, s = math.cos(angle), math.sin(angle)
    # lx = c dx + s dy and ly = -s dx + c dy must lie in each band's bounds
    l1, r1 = _row_intervals(c, s * dys[None, :], _BAND_X[0], _BAND_X[1])
    l2, r2 = _row_intervals(-s, c * dys[None, :], _BAND_Y[0], _BAND_Y[1])
    left, right = np.maximum(l1, l2), np.minimum(r1, r2)  # (4, rows)
    first = np.searchsorted(dxs, left.ravel(), "left").astype(np.int16).reshape(left.shape)
    stop = np.searchsorted(dxs, right.ravel(), "right").astype(np.int16).reshape(left.shape)
    index = np.arange(len(dxs), dtype=np.int16)
    bands = (index >= first[:, :, None]) & (index < stop[:, :, None])  # (4, rows, cols)
    covered = bands[0] | bands[2]  # bar out, bar in, stem out, stem in
    edge = (bands[0] & ~bands[1]) | (bands[2] & ~bands[3])
    return np.stack([covered, edge]).astype(np.float32)


def _segment_distance(xs: np.ndarray, ys: np.ndarray, a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    ax, ay = a
    ex, ey = b[0] - ax, b[1] - ay
    t = np.clip(((xs - ax) * ex + (ys - ay) * ey) / (ex * ex + ey * ey), 0.0, 1.0)
    return np.hypot(xs - ax - t * ex, ys - ay - t * ey)


def static_layer(xs: np.ndarray, ys: np.ndarray, goal_pose: Sequence[float]) -> np.ndarray:
    """(..., 3) colours of the background: white, the goal T, the walls."""
    rgb = np.empty(xs.shape + (3,), dtype=np.float32)
    rgb[...] = WHITE
    lx, ly = _to_body(xs, ys, goal_pose)
    goal_inside = np.zeros(xs.shape, dtype=bool)
    for (x0, y0), _, (x1, y1), _ in geo.T_BOXES:
        goal_inside |= (lx >= x0) & (lx <= x1) & (ly >= y0) & (ly <= y1)
    rgb[goal_inside] = GOAL_GREEN
    for a, b in WALL_SEGMENTS:
        rgb[_segment_distance(xs, ys, a, b) <= WALL_RADIUS] = WALL_GRAY
    return rgb


def block_layer(xs: np.ndarray, ys: np.ndarray, pose: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(colours (..., 3), coverage mask (...)) of the block T at `pose`."""
    covered, edge = _box_masks(*_to_body(xs, ys, pose))
    rgb = np.zeros(xs.shape + (3,), dtype=np.float32)
    rgb[covered] = BLOCK_FILL
    rgb[edge] = BLOCK_EDGE
    return rgb, covered


def agent_layer(xs: np.ndarray, ys: np.ndarray, pos: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(colours (..., 3), coverage mask (...)) of the agent disc at `pos`."""
    d2 = (xs - pos[0]) ** 2 + (ys - pos[1]) ** 2
    outer = d2 <= AGENT_RADIUS ** 2
    rgb = np.zeros(xs.shape + (3,), dtype=np.float32)
    rgb[outer] = AGENT_OUTER
    rgb[d2 <= AGENT_INNER_RADIUS ** 2] = AGENT_INNER
    return rgb, outer


# ----- the bilinear resize, as sample points and weights ------------------------------------
def resize_taps(size: int, index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per output pixel, the two canvas points the bilinear resize reads and their weights.

    `index` may run past the image (for sprites); for size <= 512 the taps of the real
    pixels stay inside the canvas. Returns (points (2, n) world coordinates, weights (2, n)).
    """
    index = np.arange(size) if index is None else index
    src = (index + 0.5) * (CANVAS / size) - 0.5
    lo = np.floor(src)
    frac = src - lo
    return np.stack([lo, lo + 1]), np.stack([1.0 - frac, frac]).astype(np.float32)


def tap_grid(row_taps: np.ndarray, col_taps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World points (2, rows, 2, cols) of every tap pair: (xs, ys)."""
    shape = (2, row_taps.shape[1], 2, col_taps.shape[1])
    return (np.broadcast_to(col_taps[None, None, :, :], shape),
            np.broadcast_to(row_taps[:, :, None, None], shape))


def _blend(values: np.ndarray, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
    """values (2, ny, 2, nx, C) at the taps -> (ny, nx, C) bilinear result."""
    w = wy[:, :, None, None, None] * wx[None, None, :, :, None]  # (2, ny, 2, nx, 1)
    return (values * w).sum(axis=(0, 2))


@functools.lru_cache(maxsize=8)
def _shared_parts(size: int, goal_pose: tuple[float, float, float]) -> dict:
    """What every renderer of one size and goal shares: taps, background, agent sprites."""
    taps, weights = resize_taps(size)  # (2, size) each
    gx, gy = tap_grid(taps, taps)
    background = _blend(static_layer(gx, gy, goal_pose), weights, weights)  # (S, S, 3)
    row_blend = np.zeros((size, 2 * size), dtype=np.float32)  # pixel <- its two taps
    row_blend[np.arange(size), 2 * np.arange(size)] = weights[0]
    row_blend[np.arange(size), 2 * np.arange(size) + 1] = weights[1]
    # Taps repeat every `period` pixels, shifted by `period_units` canvas units.
    period = size // math.gcd(size, CANVAS)
    scale = CANVAS / size
    first = int(math.floor(-(AGENT_RADIUS + 1) / scale - 1.5))
    last = int(math.ceil((period * CANVAS // size + AGENT_RADIUS + 1) / scale + 1.5))
    background = np.ascontiguousarray(background.transpose(2, 0, 1) / 255.0)  # (3, S, S)
    background.setflags(write=False)  # shared by every renderer: copied, never changed
    return {"taps": taps, "weights": weights, "row_blend": row_blend,
            "col_blend": np.ascontiguousarray(row_blend.T), "background": background,
            "period": period, "period_units": period * CANVAS // size,
            "sprite_first": first, "sprite_span": last - first, "agent_sprites": {}}


class Renderer:
    """Fast policy images: float32 (3, size, size) in [0, 1]."""

    def __init__(self, size: int = 96, goal_pose: Sequence[float] = geo.GOAL_POSE) -> None:
        self.size = size
        self.goal_pose = tuple(float(v) for v in goal_pose)
        parts = _shared_parts(size, self.goal_pose)
        self.taps, self.weights = parts["taps"], parts["weights"]
        self.background = parts["background"]
        self._row_blend, self._col_blend = parts["row_blend"], parts["col_blend"]
        self.period, self.period_units = parts["period"], parts["period_units"]
        self._sprite_first, self._sprite_span = parts["sprite_first"], parts["sprite_span"]
        self._agent_sprites: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = parts["agent_sprites"]
        self._block_key: tuple | None = None
        self._block_image: tuple | None = None

    def _pixel_range(self, lo: float, hi: float) -> tuple[int, int]:
        scale = CANVAS / self.size
        first = int(math.floor((lo - 1.0) / scale - 0.5))
        last = int(math.ceil((hi + 1.0) / scale + 0.5))
        return max(first, 0), min(last, self.size)

    def _block(self, pose: tuple[float, float, float]):
        if pose != self._block_key:
            self._block_image = self._block_sprite(pose)
            self._block_key = pose
        return self._block_image

    def _block_sprite(self, pose: tuple[float, float, float]):
        """Blend the block T inside its bounding box, from separable tap coordinates."""
        corners = [p for poly in geo.t_polygons(pose) for p in poly]
        r0, r1 = self._pixel_range(min(p[1] for p in corners) - EDGE_RADIUS,
                                   max(p[1] for p in corners) + EDGE_RADIUS)
        c0, c1 = self._pixel_range(min(p[0] for p in corners) - EDGE_RADIUS,
                                   max(p[0] for p in corners) + EDGE_RADIUS)
        if r1 <= r0 or c1 <= c0:
            return None
        dxs = self.taps[:, c0:c1].T.reshape(-1) - pose[0]  # (2w,) tap columns, lo/hi interleaved
        dys = self.taps[:, r0:r1].T.reshape(-1) - pose[1]  # (2h,)
        masks = t_row_masks(dxs, dys, pose[2])  # (2, 2h, 2w)
        # the bilinear blend as two thin matrix products: (h, 2h) @ masks @ (2w, w)
        alpha, edge_alpha = self._row_blend[r0:r1, 2 * r0:2 * r1] @ masks @ self._col_blend[2 * c0:2 * c1, c0:c1]
        colour = alpha * _FILL + edge_alpha * _EDGE_MINUS_FILL  # (3, h, w)
        return slice(r0, r1), slice(c0, c1), colour, alpha

    def _agent(self, agent_pos: Sequence[float]):
        """The agent's layer from a cache of sprites, one per sub-pixel phase.

        Output pixel i + period reads the canvas points of pixel i shifted by period_units, so
        a sprite made for the position's phase (quantised to 1/AGENT_QUANT unit) is reused.
        """
        q = AGENT_QUANT
        key_x, key_y = int(round(agent_pos[0] * q)), int(round(agent_pos[1] * q))
        shift_x, phase_x = divmod(key_x, self.period_units * q)
        shift_y, phase_y = divmod(key_y, self.period_units * q)
        sprite = self._agent_sprites.get((phase_x, phase_y))
        if sprite is None:
            sprite = self._agent_sprite(phase_x / q, phase_y / q)
            self._agent_sprites[(phase_x, phase_y)] = sprite
        colour, alpha = sprite
        r0 = self._sprite_first + shift_y * self.period
        c0 = self._sprite_first + shift_x * self.period
        return _clip_sprite(r0, c0, colour, alpha, self.size)

    def _agent_sprite(self, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
        idx = np.arange(self._sprite_first, self._sprite_first + self._sprite_span)
        taps, weights = resize_taps(self.size, idx)
        gx, gy = tap_grid(taps, taps)
        rgb, mask = agent_layer(gx, gy, (x, y))
        colour = _blend(rgb * mask[..., None], weights, weights).transpose(2, 0, 1) / 255.0
        alpha = _blend(mask[..., None].astype(np.float32), weights, weights)[..., 0]
        return colour.astype(np.float32), alpha.astype(np.float32)

    def render(self, agent_pos: Sequence[float], block_pose: Sequence[float]) -> np.ndarray:
        """float32 (3, size, size) in [0, 1]: background, agent, then block (the reference's order)."""
        image = self.background.copy()
        for layer in (self._agent(agent_pos), self._block(tuple(block_pose))):
            if layer is None:
                continue
            rows, cols, colour, alpha = layer
            region = image[:, rows, cols]
            region *= 1.0 - alpha
            region += colour
        return image


def _clip_sprite(r0: int, c0: int, colour: np.ndarray, alpha: np.ndarray, size: int):
    """Place a sprite with top-left (r0, c0) on a size x size image; None when it is outside."""
    h, w = alpha.shape
    top, left = max(r0, 0), max(c0, 0)
    bottom, right = min(r0 + h, size), min(c0 + w, size)
    if bottom <= top or right <= left:
        return None
    sr, sc = slice(top - r0, bottom - r0), slice(left - c0, right - c0)
    return slice(top, bottom), slice(left, right), colour[:, sr, sc], alpha[sr, sc]


def render_frame(agent_pos: Sequence[float], block_pose: Sequence[float],
                 goal_pose: Sequence[float] = geo.GOAL_POSE, size: int = 512) -> np.ndarray:
    """uint8 (size, size, 3) frame for people, 2 x 2 supersampled."""
    sub = (np.arange(2 * size) + 0.5) * (CANVAS / (2 * size))
    xs, ys = np.meshgrid(sub, sub)
    rgb = static_layer(xs, ys, goal_pose)
    for layer_fn, anchor in ((agent_layer, agent_pos), (block_layer, block_pose)):
        colour, mask = layer_fn(xs, ys, anchor)
        rgb[mask] = colour[mask]
    rgb = rgb.reshape(size, 2, size, 2, 3).mean(axis=(1, 3))
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)
