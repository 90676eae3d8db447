"""Rendering PushT the way the reference data looks, straight into small images.

The reference draws on a 512 x 512 canvas (one unit = one pixel) and resizes to 96 x 96 with
bilinear interpolation, which reads two canvas pixels per output pixel and axis. This
renderer evaluates exactly those canvas points from the shapes (no canvas is drawn) and
blends them with the same weights. The walls and the goal never move: their image is made
once, and the block is painted on a copy of it when it moves. The block's rectangles meet
each row of canvas points in one run, so its layer is a few prefix-sum look-ups per row and two
small matrix products. The agent comes from a cache of sprites (pasted whole where the
background under it is white).
"""
from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from imf.pusht import geometry as geo
from imf.pusht.raster import goal_mask

CANVAS = 512
WHITE = (255.0, 255.0, 255.0)
GOAL_GREEN = (144.0, 238.0, 144.0)          # LightGreen
BLOCK_EDGE = (119.0, 136.0, 153.0)          # LightSlateGray
BLOCK_FILL = (143.0, 163.0, 184.0)          # LightSlateGray x 1.2, rounded (pymunk's as_int)
AGENT_OUTER = (65.0, 105.0, 225.0)          # RoyalBlue
AGENT_INNER = (78.0, 126.0, 255.0)          # RoyalBlue x 1.2, capped
WALL_GRAY = (211.0, 211.0, 211.0)           # LightGray
EDGE_RADIUS = 2.0                           # the block's outline: fat segments of radius 2
WALL_RADIUS = 2.0
AGENT_RADIUS, AGENT_INNER_RADIUS = 15.0, 11.0
AGENT_QUANT = 1  # the reference draws at integer pixels: agent sprites every canvas unit
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


# The T's boxes grown by the outline's band and shrunk by it (bar out, bar in, stem out,
# stem in), then the bar-stem overlaps (out-out, out-in, in-out; in-in is always empty) as
# body-frame rectangles (x0, y0, x1, y1). _BOUNDS: (lo/hi, axis lx/ly, band, 1).
_BANDS = [(b[0][0] - g, b[0][1] - g, b[2][0] + g, b[2][1] + g)
          for b in geo.T_BOXES for g in (EDGE_RADIUS, -EDGE_RADIUS)]
_BANDS += [(max(_BANDS[i][0], _BANDS[j][0]), max(_BANDS[i][1], _BANDS[j][1]),
            min(_BANDS[i][2], _BANDS[j][2]), min(_BANDS[i][3], _BANDS[j][3]))
           for i, j in ((0, 2), (0, 3), (1, 2))]
_BOUNDS = np.array(_BANDS).T.reshape(2, 2, len(_BANDS), 1)
# The same bounds ordered so that dividing by the coefficients (c, -s) of dx gives (left,
# right) ends, for each pair of coefficient signs: {(c > 0, -s > 0): (end, axis, band, 1)}.
_ORDERED_BOUNDS = {(cx, cy): np.stack([_BOUNDS[[1 - cx, 1 - cy], [0, 1]], _BOUNDS[[cx, cy], [0, 1]]])
                   for cx in (0, 1) for cy in (0, 1)}
# The boxes' centres and half sizes, for the block's bounding box.
_BOX_FRAMES = [((x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2, (y1 - y0) / 2)
               for (x0, y0), _, (x1, y1), _ in geo.T_BOXES]


def _row_intervals(coef: float, offset: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Per band and row, the dx with lo <= coef * dx + offset <= hi: (left, right) (7, rows)."""
    if abs(coef) < 1e-12:
        inside = (offset >= lo) & (offset <= hi)
        return np.where(inside, -np.inf, np.inf), np.where(inside, np.inf, -np.inf)
    a, b = (lo - offset) / coef, (hi - offset) / coef
    return (a, b) if coef > 0 else (b, a)


def _band_ranges(dys: np.ndarray, c: float, s: float) -> np.ndarray:
    """Per band and row dy, the dx range inside the band: (left / right, 7, rows)."""
    # lx = c dx + s dy and ly = -s dx + c dy must lie in each band's bounds
    ranges = np.empty((2, len(_BANDS), len(dys)))
    if min(abs(c), abs(s)) < 1e-12:  # box sides parallel to the rows
        l1, r1 = _row_intervals(c, s * dys[None, :], _BOUNDS[0, 0], _BOUNDS[1, 0])
        l2, r2 = _row_intervals(-s, c * dys[None, :], _BOUNDS[0, 1], _BOUNDS[1, 1])
        ends = np.array(((l1, l2), (r1, r2)))
    else:
        coefs = np.array(((s,), (c,), (c,), (-s,)))[:, :, None]  # (4, 1, 1): offsets, then dx
        ends = (_ORDERED_BOUNDS[(c > 0, -s > 0)] - coefs[:2] * dys) / coefs[2:]
    np.maximum(ends[0, 0], ends[0, 1], out=ranges[0])
    np.minimum(ends[1, 0], ends[1, 1], out=ranges[1])
    return ranges


def t_tap_runs(dxs: np.ndarray, dys: np.ndarray, c: float, s: float) -> np.ndarray:
    """The T's taps on the grid dys x dxs (offsets from the block origin, dxs ascending).

    A rotated rectangle meets each row in one run of taps. Returns intp (14, rows): the first
    taps of the runs of the 7 bands of _BANDS, then the runs' stops.
    """
    ranges = _band_ranges(dys, c, s)
    np.nextafter(ranges[1], np.inf, out=ranges[1])  # taps <= right are the taps < this
    n = len(_BANDS)
    runs = np.searchsorted(dxs, ranges.ravel()).reshape(2 * n, len(dys))
    np.maximum(runs[n:], runs[:n], out=runs[n:])  # empty runs
    return runs


def _run_weights() -> np.ndarray:
    """float32 (4, 14): the block's layers (-alpha, r, g, b) from the runs of t_tap_runs.

    Per run, the blend of its taps is prefix(stop) - prefix(first); the T's coverage and
    outline, (bar out | stem out) and (bar out - bar in) | (stem out - stem in), are sums of
    runs by inclusion-exclusion.
    """
    covered = np.array([1, 0, 1, 0, -1, 0, 0], dtype=np.float64)
    outline = np.array([1, -1, 1, -1, -1, 1, 1], dtype=np.float64)
    fill = np.asarray(BLOCK_FILL)[:, None] / 255.0
    edge = np.asarray(BLOCK_EDGE)[:, None] / 255.0
    layers = np.concatenate([-covered[None], fill * covered + (edge - fill) * outline])  # (4, 7)
    return np.concatenate([-layers, layers], axis=1).astype(np.float32)


_RUN_WEIGHTS = _run_weights()


def _segment_distance(xs: np.ndarray, ys: np.ndarray, a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    ax, ay = a
    ex, ey = b[0] - ax, b[1] - ay
    t = np.clip(((xs - ax) * ex + (ys - ay) * ey) / (ex * ex + ey * ey), 0.0, 1.0)
    return np.hypot(xs - ax - t * ex, ys - ay - t * ey)


def static_layer(xs: np.ndarray, ys: np.ndarray, goal_pose: Sequence[float]) -> np.ndarray:
    """(..., 3) colours of the background: white, the goal T (the reference's pixels, see
    imf.pusht.raster), the walls."""
    rgb = np.empty(xs.shape + (3,), dtype=np.float32)
    rgb[...] = WHITE
    rgb[goal_mask(xs, ys, goal_pose)] = GOAL_GREEN
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


# A layer: (r0, r1, c0, c1, values (4, r1 - r0, c1 - c0) float32: 1 - alpha, then r, g, b
# premultiplied by alpha), painted over an image as image * (1 - alpha) + colour.
Layer = tuple[int, int, int, int, np.ndarray]


@functools.lru_cache(maxsize=8)
def _shared_parts(size: int, goal_pose: tuple[float, float, float]) -> dict:
    """What every renderer of one size and goal shares: taps, background, agent sprites."""
    taps, weights = resize_taps(size)  # (2, size) each
    gx, gy = tap_grid(taps, taps)
    background = _blend(static_layer(gx, gy, goal_pose), weights, weights)  # (S, S, 3)
    row_blend = np.zeros((size, 2 * size))  # pixel <- its two taps
    row_blend[np.arange(size), 2 * np.arange(size)] = weights[0]
    row_blend[np.arange(size), 2 * np.arange(size) + 1] = weights[1]
    # col_prefix[k, j]: the weight of column j's taps among the first k taps, (2S + 1, S)
    col_prefix = np.concatenate([np.zeros((1, size)), np.cumsum(row_blend.T, axis=0)])
    # Taps repeat every `period` pixels, shifted by `period_units` canvas units.
    period = size // math.gcd(size, CANVAS)
    scale = CANVAS / size
    first = int(math.floor(-(AGENT_RADIUS + 1) / scale - 1.5))
    last = int(math.ceil((period * CANVAS // size + AGENT_RADIUS + 1) / scale + 1.5))
    background = np.ascontiguousarray(background.transpose(2, 0, 1) / 255.0, dtype=np.float32)
    background.setflags(write=False)  # shared by every renderer: copied, never changed
    not_white = np.zeros((size + 1, size + 1), dtype=np.int64)
    not_white[1:, 1:] = (np.abs(background - 1.0) > 1e-6).any(axis=0).cumsum(0).cumsum(1)
    return {"taps_flat": taps.T.reshape(-1),
            "row_blend": row_blend.astype(np.float32), "col_prefix": col_prefix.astype(np.float32),
            "background": background, "period": period, "period_units": period * CANVAS // size,
            "sprite_first": first, "sprite_span": last - first, "agent_sprites": {},
            "not_white": not_white.tolist()}


class Renderer:
    """Fast policy images: float32 (3, size, size) in [0, 1].

    Keeps the background with the block painted on (`_base`), updated when the block moves;
    each image is a copy of it with the agent painted under the block.
    """

    def __init__(self, size: int = 96, goal_pose: Sequence[float] = geo.GOAL_POSE) -> None:
        self.size = size
        self.goal_pose = tuple(float(v) for v in goal_pose)
        parts = _shared_parts(size, self.goal_pose)
        self.background = parts["background"]
        self._taps_flat = parts["taps_flat"]  # (2S,) tap coordinates, lo/hi interleaved
        self._row_blend, self._col_prefix = parts["row_blend"], parts["col_prefix"]
        self.period, self.period_units = parts["period"], parts["period_units"]
        self._sprite_first, self._sprite_span = parts["sprite_first"], parts["sprite_span"]
        self._agent_sprites: dict[tuple[int, int], tuple] = parts["agent_sprites"]
        self._not_white = parts["not_white"]
        self._base = self.background.copy()
        self._block_key: tuple | None = None
        self._block_image: Layer | None = None

    def render(self, agent_pos: Sequence[float], block_pose: Sequence[float]) -> np.ndarray:
        """float32 (3, size, size) in [0, 1]: background, agent, then block (the reference's order)."""
        pose = tuple(block_pose)
        block = self._block_image if pose == self._block_key else self._move_block(pose)
        image = self._base.copy()
        agent, on_white = self._agent(agent_pos)
        if agent is not None:
            r0, r1, c0, c1, _ = agent
            if on_white is not None:
                image[:, r0:r1, c0:c1] = on_white
            else:
                self._paint_on_background(image, agent)
            if block is not None:
                _paint(image, block, (r0, r1, c0, c1))
        return image

    def _paint_on_background(self, image: np.ndarray, layer: Layer) -> None:
        """image <- the layer over the background (not over what `image` holds), in its box."""
        r0, r1, c0, c1, values = layer
        region = image[:, r0:r1, c0:c1]
        np.multiply(self.background[:, r0:r1, c0:c1], values[0], out=region)
        region += values[1:]

    # ----- the block ---------------------------------------------------------------------
    def _move_block(self, pose: tuple[float, float, float]) -> Layer | None:
        """Make the block's layer at `pose` and paint it on the kept background copy."""
        old, new = self._block_image, self._block_sprite(pose)
        covered = new is not None and old is not None and new[0] <= old[0] and old[1] <= new[1] \
            and new[2] <= old[2] and old[3] <= new[3]  # the new box holds the old one
        if old is not None and not covered:
            rows, cols = slice(old[0], old[1]), slice(old[2], old[3])
            self._base[:, rows, cols] = self.background[:, rows, cols]
        if new is not None:
            self._paint_on_background(self._base, new)
        self._block_key, self._block_image = pose, new
        return new

    def _pixel_range(self, lo: float, hi: float) -> tuple[int, int]:
        scale = CANVAS / self.size
        first = int(math.floor((lo - 1.0) / scale - 0.5))
        last = int(math.ceil((hi + 1.0) / scale + 0.5))
        return max(first, 0), min(last, self.size)

    def _block_box(self, x: float, y: float, c: float, s: float) -> tuple[int, int, int, int]:
        """Pixel rows and columns (r0, r1, c0, c1) that the T and its outline can touch."""
        xs, ys = [], []
        for cx, cy, hx, hy in _BOX_FRAMES:
            ex, ey = abs(c) * hx + abs(s) * hy + EDGE_RADIUS, abs(s) * hx + abs(c) * hy + EDGE_RADIUS
            wx, wy = x + c * cx - s * cy, y + s * cx + c * cy
            xs += (wx - ex, wx + ex)
            ys += (wy - ey, wy + ey)
        return self._pixel_range(min(ys), max(ys)) + self._pixel_range(min(xs), max(xs))

    def _block_sprite(self, pose: tuple[float, float, float]) -> Layer | None:
        """The block T's layer inside its bounding box, from the runs of taps inside it."""
        x, y, angle = pose
        c, s = math.cos(angle), math.sin(angle)
        r0, r1, c0, c1 = self._block_box(x, y, c, s)
        if r1 <= r0 or c1 <= c0:
            return None
        runs = t_tap_runs(self._taps_flat[2 * c0:2 * c1] - x, self._taps_flat[2 * r0:2 * r1] - y, c, s)
        # the column blend of a run of taps is a difference of prefix sums: (14, 2h, w)
        prefixes = np.take(self._col_prefix[2 * c0:2 * c1 + 1, c0:c1], runs, axis=0)
        values = (_RUN_WEIGHTS @ prefixes.reshape(len(runs), -1)).reshape(4, 2 * (r1 - r0), c1 - c0)
        values = self._row_blend[r0:r1, 2 * r0:2 * r1] @ values  # (4, h, w)
        values[0] += 1.0
        return r0, r1, c0, c1, values

    # ----- the agent ---------------------------------------------------------------------
    def _agent(self, agent_pos: Sequence[float]) -> tuple[Layer | None, np.ndarray | None]:
        """The agent's layer from a cache of sprites, one per sub-pixel phase, and the sprite
        painted over white when the background under it is white and it is not cut (else None).

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
        top, left, values, on_white = sprite
        r0, c0 = top + shift_y * self.period, left + shift_x * self.period
        r1, c1 = r0 + values.shape[1], c0 + values.shape[2]
        if r0 < 0 or c0 < 0 or r1 > self.size or c1 > self.size:  # cut at the image's edge
            return _clip(r0, c0, values, self.size), None
        n = self._not_white  # 2-D prefix counts of background pixels that are not white
        white = n[r1][c1] - n[r0][c1] - n[r1][c0] + n[r0][c0] == 0
        return (r0, r1, c0, c1, values), (on_white if white else None)

    def _agent_sprite(self, x: float, y: float) -> tuple[int, int, np.ndarray, np.ndarray]:
        """(top row, left column, values (4, h, w), the sprite over white (3, h, w)) of the
        agent at (x, y), trimmed to its disc."""
        idx = np.arange(self._sprite_first, self._sprite_first + self._sprite_span)
        taps, weights = resize_taps(self.size, idx)
        gx, gy = tap_grid(taps, taps)
        rgb, mask = agent_layer(gx, gy, (x, y))
        colour = _blend(rgb * mask[..., None], weights, weights).transpose(2, 0, 1) / 255.0
        alpha = _blend(mask[..., None].astype(np.float32), weights, weights)[..., 0].astype(np.float32)
        values = np.concatenate([1.0 - alpha[None], colour.astype(np.float32)])
        rows, cols = np.flatnonzero(alpha.any(axis=1)), np.flatnonzero(alpha.any(axis=0))
        values = values[:, rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
        return self._sprite_first + rows[0], self._sprite_first + cols[0], values, values[0] + values[1:]


def _paint(image: np.ndarray, layer: Layer, box: tuple[int, int, int, int]) -> None:
    """image (3, S, S) <- the layer over it, inside `box` (r0, r1, c0, c1)."""
    r0, r1 = max(layer[0], box[0]), min(layer[1], box[1])
    c0, c1 = max(layer[2], box[2]), min(layer[3], box[3])
    if r1 <= r0 or c1 <= c0:
        return
    values = layer[4][:, r0 - layer[0]:r1 - layer[0], c0 - layer[2]:c1 - layer[2]]
    region = image[:, r0:r1, c0:c1]
    region *= values[0]
    region += values[1:]


def _clip(r0: int, c0: int, values: np.ndarray, size: int) -> Layer | None:
    """A sprite with top-left (r0, c0) cut to a size x size image; None when it is outside."""
    h, w = values.shape[1:]
    top, left = max(r0, 0), max(c0, 0)
    bottom, right = min(r0 + h, size), min(c0 + w, size)
    if bottom <= top or right <= left:
        return None
    return top, bottom, left, right, values[:, top - r0:bottom - r0, left - c0:right - c0]


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
