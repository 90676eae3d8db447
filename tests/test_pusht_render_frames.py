"""The fast renderer keeps the look: frames saved from the renderer before it was sped up,
re-saved when the block fill and the goal's pixels moved to the reference's (issue 9; the
re-saved frames differ from the old ones by at most 1/255 except on pixels whose resize taps
touch a goal pixel that changed).

tests/test_pusht_render_frames.npz holds `states` (N, 5: agent x, y, block x, y, angle), the
frames as uint16 (N, 3, 96, 96) = round(image * 65535), and `n_single`: the first n_single
states were each drawn by a fresh Renderer (agent at the corners and edges, block against the
walls or partly off the canvas, angles 0, pi/2, pi, beyond 2 pi), the rest one after another by
one Renderer along an expert episode (the block moves on some steps and is reused on others).
"""
from pathlib import Path

import numpy as np
import pytest

from imf.pusht import render as R

FRAMES = Path(__file__).with_suffix(".npz")
TOLERANCE = 1e-5  # per pixel and channel: the uint16 rounding (1/131070) and float32 noise


@pytest.fixture(scope="module")
def saved():
    data = np.load(FRAMES)
    return data["states"], data["frames"].astype(np.float64) / 65535.0, int(data["n_single"])


def test_single_frames_match_the_saved_ones(saved):
    states, frames, n_single = saved
    for state, frame in zip(states[:n_single], frames[:n_single]):
        image = R.Renderer(96).render(state[:2], state[2:])
        assert image.shape == (3, 96, 96) and image.dtype == np.float32
        assert np.abs(image - frame).max() <= TOLERANCE, state


def test_an_episode_rendered_in_turn_matches_the_saved_frames(saved):
    states, frames, n_single = saved
    renderer = R.Renderer(96)
    worst = max(np.abs(renderer.render(s[:2], s[2:]) - f).max()
                for s, f in zip(states[n_single:], frames[n_single:]))
    assert worst <= TOLERANCE


def test_returned_images_are_independent(saved):
    states, frames, n_single = saved
    renderer = R.Renderer(96)
    first = renderer.render(states[0, :2], states[0, 2:])
    kept = first.copy()
    first[:] = 0.0  # a caller may write into its image
    renderer.render(states[1, :2], states[1, 2:])
    again = renderer.render(states[0, :2], states[0, 2:])
    assert np.array_equal(again, kept)
