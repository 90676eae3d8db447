"""Every id imf makes for a trial is one ``imf trial --id`` accepts: a sweep whose grid holds a
value with '+', a space or a non-ASCII letter plans trials that can start."""
from __future__ import annotations

import pytest

from imf.cli.trial import check_trial_id
from imf.store.identity import id_word, readable_id


@pytest.mark.parametrize("value", ["1e+4", "1e-3", "a b", "é", "x/y", "+1", "0.5"])
def test_an_id_word_makes_an_id_imf_trial_accepts(value):
    assert check_trial_id(readable_id("sweep", 42, [("lr", value)]))
    assert check_trial_id(readable_id("toy", 42, [("lr", value)], seed_last=True))
    assert id_word("1e+4") != id_word("1e-4")  # distinct values keep distinct ids
