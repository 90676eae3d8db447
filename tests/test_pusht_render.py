"""The renderer draws the reference's picture: 512 canvas points, bilinear resize, the spec's colours."""
import math
from pathlib import Path

import numpy as np
import pytest

from imf.pusht import render as R
from imf.pusht.env import PushTEnv

GOAL = (256.0, 256.0, math.pi / 4)


def _reference_image(agent, pose, size=96):
    """Slow definition: paint every canvas point the resize reads, then blend bilinearly."""
    taps, weights = R.resize_taps(size)
    gx, gy = R.tap_grid(taps, taps)
    rgb = R.static_layer(gx, gy, GOAL)
    agent = (round(agent[0]), round(agent[1]))  # the reference's canvas draws the disc at integer pixels
    for layer, anchor in ((R.agent_layer, agent), (R.block_layer, pose)):
        colour, mask = layer(gx, gy, anchor)
        rgb = np.where(mask[..., None], colour, rgb)
    w = weights[:, :, None, None, None] * weights[None, None, :, :, None]
    return ((rgb * w).sum(axis=(0, 2)) / 255.0).transpose(2, 0, 1)


@pytest.mark.parametrize("agent, pose", [((100.0, 100.0), (300.0, 310.0, 1.0)),
                                         ((37.4, 451.2), (256.0, 256.0, GOAL[2])),
                                         ((4.0, 500.0), (120.3, 410.7, 3.0))])
def test_fast_renderer_equals_the_slow_definition(agent, pose):
    fast = R.Renderer(96).render(agent, pose)
    assert fast.shape == (3, 96, 96) and fast.dtype == np.float32
    diff = np.abs(fast - _reference_image(agent, pose))
    # exact, except where a moving shape's edge crosses the goal's edge inside one pixel
    # (layers are blended by coverage there): a few values, by a few percent at most
    assert (diff > 1e-5).mean() < 1e-3 and diff.max() < 0.05


def test_colours_of_the_spec():
    env = PushTEnv("image")
    obs, _ = env.reset(options={"reset_to_state": [60.0, 60.0, 256.0, 300.0, 0.0]})
    image = obs["image"] * 255.0  # (3, 96, 96)

    def pixel(x, y):  # world point -> the 96 pixel that holds it
        return image[:, int(y * 96 / 512), int(x * 96 / 512)]

    assert pixel(420, 470) == pytest.approx((255, 255, 255), abs=0.5)          # background
    goal_centre = (256 - 35 * math.sin(GOAL[2]), 256 + 35 * math.cos(GOAL[2]))  # inside the goal stem
    assert pixel(*goal_centre) == pytest.approx((144, 238, 144), abs=0.5)
    assert pixel(256, 300 + 15) == pytest.approx((143, 163, 184), abs=0.5)       # block fill
    assert pixel(256 + 60, 300 + 15) == pytest.approx((119, 136, 153), abs=12)  # block edge
    assert pixel(60, 60) == pytest.approx((78, 126, 255), abs=0.5)              # agent's inner disc
    assert image[:, 0, 50] == pytest.approx((211, 211, 211), abs=40)            # a wall, blended


def test_the_goal_covers_the_reference_canvas_pixels():
    """tests/test_pusht_render_goal.npz: the goal T on the reference's 512 canvas, drawn by
    pygame 2.1.3 as the reference does (pymunk 6.2.1 vertices of the block's two boxes at the
    goal pose, rounded by pymunk.pygame_util.to_pygame, each filled by pygame.draw.polygon)."""
    saved = np.load(Path(__file__).with_name("test_pusht_render_goal.npz"))
    reference = np.unpackbits(saved["mask"], axis=1).astype(bool)  # (512 rows y, 512 columns x)
    ys, xs = np.mgrid[0:512, 0:512].astype(np.float64)
    goal = (R.static_layer(xs, ys, GOAL) == R.GOAL_GREEN).all(axis=-1)
    assert reference.sum() == 6450 and goal.sum() == 6450
    assert np.array_equal(goal, reference)


def test_large_frame_for_people():
    env = PushTEnv()
    env.reset(seed=100000)
    frame = env.render(256)
    assert frame.shape == (256, 256, 3) and frame.dtype == np.uint8
    assert (frame == 255).all(axis=-1).mean() > 0.5  # mostly white canvas


def test_block_layer_is_reused_while_the_block_stays():
    renderer = R.Renderer(96)
    first = renderer.render((50.0, 50.0), (300.0, 300.0, 0.5))
    cached = renderer._block_image
    second = renderer.render((60.0, 50.0), (300.0, 300.0, 0.5))
    assert renderer._block_image is cached and not np.array_equal(first, second)
