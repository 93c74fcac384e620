"""The sparse and replacement batch evaluations equal the dense batch, value for value, and
raise the same :class:`MissingEntryError` for the same first subset: the solvers that use
them return exactly what they returned with dense batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_instances, small_instances

from topoopt.core.errors import TopooptError
from topoopt.gpuselect import GpuSelectInstance
from topoopt.gpuselect.generate import MODEL_KINDS
from topoopt.gpuselect.masks import submasks


def _outcome(action: Callable[[], np.ndarray]) -> tuple[Any, ...]:
    try:
        return ("values", action().tolist())
    except TopooptError as exc:
        return ("error", type(exc).__name__, str(exc))


@st.composite
def _masks(draw: st.DrawFn, inst: GpuSelectInstance, host: int) -> int:
    """An idle subset of host ``host`` (possibly empty)."""
    return draw(st.sampled_from(list(submasks(inst.hosts[host].available_mask))))


@st.composite
def _sparse_rows(draw: st.DrawFn, inst: GpuSelectInstance) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``w`` distinct hosts and an idle subset of each."""
    width = draw(st.integers(1, inst.n_hosts))
    n = draw(st.integers(1, 12))
    hosts, masks = [], []
    for _ in range(n):
        row = draw(st.permutations(range(inst.n_hosts)))[:width]
        hosts.append(row)
        masks.append([draw(_masks(inst, h)) for h in row])
    return np.array(hosts, dtype=np.int64), np.array(masks, dtype=np.int64)


@st.composite
def _replacements(
    draw: st.DrawFn, inst: GpuSelectInstance
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A dense subset and replacements of one host's mask."""
    base = np.array([draw(_masks(inst, h)) for h in range(inst.n_hosts)], dtype=np.int64)
    n = draw(st.integers(1, 12))
    hosts = [draw(st.integers(0, inst.n_hosts - 1)) for _ in range(n)]
    masks = [draw(_masks(inst, h)) for h in hosts]
    return base, np.array(hosts, dtype=np.int64), np.array(masks, dtype=np.int64)


def _check(inst: GpuSelectInstance, data: st.DataObject) -> None:
    bound = inst.bound
    hosts, masks = data.draw(_sparse_rows(inst))
    dense = np.zeros((len(hosts), inst.n_hosts), dtype=np.int64)
    dense[np.arange(len(hosts))[:, None], hosts] = masks
    assert _outcome(lambda: bound.batch_sparse(hosts, masks)) == _outcome(
        lambda: bound.batch(dense)
    )
    base, where, new = data.draw(_replacements(inst))
    rows = np.repeat(base[None, :], len(where), axis=0)
    rows[np.arange(len(where)), where] = new
    assert _outcome(lambda: bound.batch_replace(base, where, new)) == _outcome(
        lambda: bound.batch(rows)
    )


@pytest.mark.parametrize("kind", MODEL_KINDS)
@settings(max_examples=25)
@given(data=st.data())
def test_layouts_equal_the_dense_batch_on_complete_tables(kind: str, data: st.DataObject) -> None:
    _check(data.draw(small_instances(kind)), data)


@pytest.mark.parametrize("kind", ("table", "bottleneck", "topology"))
@settings(max_examples=40)
@given(data=st.data())
def test_layouts_raise_like_the_dense_batch_on_partial_tables(
    kind: str, data: st.DataObject
) -> None:
    """Partial tables, cross tables keyed by ordered hosts or none: same values, same errors."""
    _check(data.draw(any_instances(kind)), data)


@settings(max_examples=25)
@given(data=st.data())
def test_layouts_equal_the_dense_batch_for_a_callable(data: st.DataObject) -> None:
    """A user callable sees the same ``(host, index)`` list in every layout."""
    inst = data.draw(small_instances("topology"))
    weights = {h.name: 1.0 + j for j, h in enumerate(inst.hosts)}

    def fn(pairs: list[tuple[str, int]]) -> float:
        return sum(weights[h] * (1 + i) * (p + 1) for p, (h, i) in enumerate(pairs))

    _check(inst.with_bandwidth(fn), data)
