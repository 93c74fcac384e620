"""The ``callable`` model: any Python function ``S -> GB/s`` (not written to JSON)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.masks import indices_of
from topoopt.gpuselect.models.base import BandwidthModel, BoundModel


class _CallableBound(BoundModel):
    """One call of the user's function per subset; batches never build dense rows (the
    function gets the same ``(host name, index)`` list as for the dense subset)."""

    def __init__(self, hosts: Sequence[Host], fn: Callable[[list[tuple[str, int]]], float]):
        super().__init__(hosts)
        self.fn = fn

    def value(self, masks: Sequence[int]) -> float:
        return float(self.fn(self.pairs(masks)))

    def _host_pairs(self, host: int, mask: int) -> list[tuple[str, int]]:
        name = self.hosts[host].name
        return [(name, i) for i in indices_of(mask)]

    def batch_sparse(self, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        rows = zip(np.asarray(hosts).tolist(), np.asarray(masks).tolist(), strict=True)
        out = []
        for row_hosts, row_masks in rows:
            pairs = [
                pair
                for h, m in sorted(zip(row_hosts, row_masks, strict=True))
                for pair in self._host_pairs(h, m)
            ]
            out.append(float(self.fn(pairs)))
        return np.array(out, dtype=float)

    def batch_replace(self, base: np.ndarray, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        base_list = np.asarray(base).tolist()
        flat: list[tuple[str, int]] = []
        start = []
        for h, m in enumerate(base_list):
            start.append(len(flat))
            flat += self._host_pairs(h, m)
        start.append(len(flat))
        out = []
        for h, m in zip(np.asarray(hosts).tolist(), np.asarray(masks).tolist(), strict=True):
            pairs = flat[: start[h]] + self._host_pairs(h, m) + flat[start[h + 1] :]
            out.append(float(self.fn(pairs)))
        return np.array(out, dtype=float)


@dataclass(frozen=True, eq=False)
class CallableModel(BandwidthModel):
    """A user function ``fn(S) -> GB/s`` where ``S`` is a list of ``(host name, index)`` pairs.

    The black box of BandPilot §3.2 (e.g. a learned surrogate). Two callable models are equal
    when they wrap the same callable object. It cannot be written to JSON: :meth:`to_dict`
    raises :class:`~topoopt.core.errors.TopooptError`.

    Examples
    --------
    >>> fn = lambda s: 10.0 * len({h for h, _ in s})
    >>> model = CallableModel(fn)
    >>> model.bind([Host("a", "T", 2, (0, 1)), Host("b", "T", 2, (0,))]).value([3, 1])
    20.0
    >>> model == CallableModel(fn), model == CallableModel(lambda s: 0.0)
    (True, False)
    """

    kind = "callable"

    fn: Callable[[list[tuple[str, int]]], float]

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise InvalidInstanceError(
                "bandwidth",
                f"must be a bandwidth model, its JSON object or a callable "
                f"S -> GB/s, got {self.fn!r}",
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallableModel):
            return NotImplemented
        return self.fn is other.fn

    def __hash__(self) -> int:
        return hash(id(self.fn))

    def bind(self, hosts: Sequence[Host]) -> BoundModel:
        return _CallableBound(hosts, self.fn)

    def to_dict(self) -> dict[str, Any]:
        raise TopooptError(
            "bandwidth: a Python callable cannot be serialised to JSON; use a table, "
            "bottleneck or topology model to save the instance"
        )
