"""PTS's per-host steps and EHA's ceiling change no choice: the same as evaluating every
removal at every step, and every candidate."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_instances, small_instances

from topoopt.core.errors import TopooptError
from topoopt.gpuselect.generate import MODEL_KINDS, large_pool
from topoopt.gpuselect.solvers import bandpilot
from topoopt.gpuselect.solvers.bandpilot import _pts, eha


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


@pytest.mark.usefixtures("host_topologies")
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


@pytest.mark.parametrize("kind", MODEL_KINDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data(), splits=st.sampled_from(["variants", "balanced"]))
def test_eha_ceiling_keeps_the_choice(kind: str, data: st.DataObject, splits: str) -> None:
    """EHA stopping at its ceiling returns what scanning every candidate returns."""
    inst = data.draw(small_instances(kind, max_hosts=6, max_pool=20))
    value, masks = eha(inst, splits=splits)
    with mock.patch.object(bandpilot, "_ceiling", lambda *args: None):
        ref_value, ref_masks = eha(inst, splits=splits)
    assert (value, masks.tolist()) == (ref_value, ref_masks.tolist())


@pytest.mark.usefixtures("host_topologies")
@pytest.mark.parametrize("k", [24, 100, 300])
def test_eha_ceiling_keeps_the_choice_on_a_pool(k: int) -> None:
    inst = large_pool(seed=2, gpus=1024, ks=(k,))[0]
    value, masks = eha(inst)
    with mock.patch.object(bandpilot, "_ceiling", lambda *args: None):
        ref_value, ref_masks = eha(inst)
    assert (value, masks.tolist()) == (ref_value, ref_masks.tolist())
