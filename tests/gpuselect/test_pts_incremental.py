"""PTS's per-host steps choose exactly what evaluating every removal at every step chooses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_instances, small_instances

from topoopt.core.errors import TopooptError
from topoopt.gpuselect.generate import MODEL_KINDS, large_pool
from topoopt.gpuselect.solvers.bandpilot import _pts


def _same(inst: object, prune_k: int) -> None:
    value, masks, finished = _pts(inst, prune_k, None)  # type: ignore[arg-type]
    ref_value, ref_masks, ref_finished = _pts(inst, prune_k, None, incremental=False)  # type: ignore[arg-type]
    assert masks.tolist() == ref_masks.tolist()
    assert value == ref_value or (np.isnan(value) and np.isnan(ref_value))
    assert finished and ref_finished


@pytest.mark.parametrize("kind", MODEL_KINDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data(), prune_k=st.sampled_from([0, 8]))
def test_incremental_pts_equals_reference(kind: str, data: st.DataObject, prune_k: int) -> None:
    _same(data.draw(small_instances(kind, max_hosts=6, max_pool=20)), prune_k)


@pytest.mark.parametrize("k", [3, 17, 40])
def test_incremental_pts_equals_reference_on_a_pool(k: int) -> None:
    _same(large_pool(seed=1, gpus=128, ks=(k,))[0], 0)


def _outcome(inst: object, incremental: bool) -> object:
    try:
        value, masks, _ = _pts(inst, 0, None, incremental=incremental)  # type: ignore[arg-type]
    except TopooptError as error:
        return type(error), str(error)
    return (None if np.isnan(value) else value), masks.tolist()


@pytest.mark.parametrize("kind", ["table", "bottleneck", "topology"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_incremental_pts_equals_reference_with_missing_entries(
    kind: str, data: st.DataObject
) -> None:
    """Partial tables: the same choice, or the same error for the same missing entry."""
    inst = data.draw(any_instances(kind))
    assert _outcome(inst, True) == _outcome(inst, False)
