"""Reuse of image formation (rendering.memo): off by default, invisible when on."""
from __future__ import annotations

import numpy as np
import pytest

from rendering import memo
from rendering import mr_image as mi
from rendering.subjects import load_runtime

ISO = (0.0, -120.0, -150.0)


@pytest.fixture(scope="module")
def dev(subject_cache):
    return load_runtime("dev")


def test_off_by_default_nothing_is_kept(dev):
    before = dict(memo.stats)
    mi.acquire_localizer(dev, ISO, seed=1)
    assert memo.stats == before and not memo._store


def test_a_hit_is_a_copy_equal_to_a_fresh_computation(dev):
    fresh = mi.acquire_localizer(dev, ISO, seed=1).stack()
    with memo.enabled():
        first = mi.acquire_localizer(dev, ISO, seed=1)
        first.images[0].pixels[:] = -1.0  # a caller that changes its result ...
        hits = memo.stats["hits"]
        second = mi.acquire_localizer(dev, ISO, seed=1)
        assert memo.stats["hits"] == hits + 1
        assert second is not first
        np.testing.assert_array_equal(second.stack(), fresh)  # ... changes nobody else's
        third = mi.acquire_localizer(dev, ISO, seed=2)  # another seed is another image
        assert not np.array_equal(third.stack(), fresh)
    assert not memo._store  # emptied when the block ends


def test_an_argument_that_cannot_be_named_by_value_is_computed_every_time(dev):
    calls = []

    @memo.reusable
    def form(subject, how):
        calls.append(how)
        return np.zeros(2)

    with memo.enabled():
        form(dev, lambda: 0)
        form(dev, lambda: 0)
        form(dev, 3)
        form(dev, 3)
    assert len(calls) == 3
