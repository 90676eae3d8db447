import numpy as np
import pytest

from imf.attention import causal, full


def test_causal_self_attention_is_lower_triangular_entry_by_entry():
    m = causal(4, 2, 2).self_attn
    assert m.shape == (4, 4) and m.dtype == bool
    for i in range(4):
        for j in range(4):
            assert m[i, j] == (j <= i), (i, j)


def test_causal_cross_attention_time_always_visible_obs_iff_k_le_i():
    n_action, n_time, n_obs = 5, 2, 3
    m = causal(n_action, n_time, n_obs).cross_attn
    assert m.shape == (n_action, n_time + n_obs)
    for i in range(n_action):
        for c in range(n_time + n_obs):
            expected = True if c < n_time else (c - n_time) <= i
            assert m[i, c] == expected, (i, c)


def test_causal_first_action_sees_only_time_and_first_obs():
    m = causal(3, 2, 2).cross_attn
    np.testing.assert_array_equal(m[0], [True, True, True, False])


def test_full_has_no_masks():
    masks = full(10, 2, 2)
    assert masks.self_attn is None and masks.cross_attn is None


@pytest.mark.parametrize("fn", [causal, full])
def test_bad_counts_rejected(fn):
    with pytest.raises(ValueError, match="n_action"):
        fn(0, 2, 2)
