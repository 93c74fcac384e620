"""The ``uneven`` generator (issue #14's classes): deterministic, valid, and within its ranges."""

from __future__ import annotations

import pytest

from topoopt.core.errors import InvalidOptionError
from topoopt.placement.generate import GENERATORS, uneven


def test_uneven_is_deterministic_and_fits_the_job():
    options = dict(
        seed=5,
        count=6,
        minipods=16,
        min_minipods=2,
        small_share=0.4,
        max_rows=64,
        max_cols=16,
        alpha=-1,
    )
    first, again = uneven(**options), uneven(**options)
    assert first == again
    for inst in first:
        assert 2 <= inst.n_minipods <= 16
        assert 2 <= inst.rows <= 64 and 2 <= inst.cols <= 16
        assert 0.01 <= inst.alpha <= 0.99
        assert sum(inst.capacities) >= inst.n_nodes
    assert GENERATORS["uneven"] is uneven


def test_uneven_fixed_shape():
    (inst,) = uneven(seed=0, minipods=64, rows=256, cols=8)
    assert (inst.n_minipods, inst.rows, inst.cols, inst.alpha, inst.tp) == (64, 256, 8, 0.37, 8)
    assert max(inst.capacities) <= 128 or sum(inst.capacities) == inst.n_nodes


@pytest.mark.parametrize(
    ("option", "value"), [("small_share", 1.5), ("alpha", 2.0), ("min_minipods", 99)]
)
def test_uneven_rejects_bad_options(option, value):
    with pytest.raises(InvalidOptionError, match=option):
        uneven(**{option: value})
