"""The interfaces every kind of bandwidth model implements (:mod:`topoopt.gpuselect.models`).

:class:`BandwidthModel` is a model as a value, which binds to an instance's hosts;
:class:`BoundModel` evaluates ``B(S)`` for those hosts, one subset or a batch of them (at
most :data:`BATCH_CELLS` cells of dense rows at a time); :class:`MissingEntryError` is what
evaluating a subset a table lacks raises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.masks import indices_of
from topoopt.gpuselect.topologies import builtin_topology

Matrix = tuple[tuple[str, ...], ...]
"""A host's ``nvidia-smi topo -m`` link matrix: one tuple of link tokens per GPU."""


class MissingEntryError(TopooptError, LookupError):
    """A measurement table has no entry for a subset whose bandwidth was asked for."""

    def __str__(self) -> str:
        return str(self.args[0])


BATCH_CELLS = 1 << 20
"""Most cells (candidate rows x hosts) one dense batch of masks holds: 8 MiB of ``int64``.
The sparse and replacement evaluations below cut their work into batches of this size, so
their memory does not grow with the number of candidates times the number of hosts."""


def _chunks(total: int, rows: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive slices of at most ``rows`` of ``range(total)``."""
    for start in range(0, total, rows):
        yield start, min(start + rows, total)


class BoundModel(ABC):
    """A bandwidth model bound to the hosts of one instance.

    Besides the reference :meth:`value` of one subset, it evaluates batches of subsets in
    three layouts, all giving exactly the values of :meth:`value` (and raising the same
    :class:`MissingEntryError` for the first subset a table lacks):

    * :meth:`batch` — dense rows, one mask per host;
    * :meth:`batch_sparse` — each subset as the few hosts it touches and their masks
      (candidates of EHA and the single-host searches);
    * :meth:`batch_replace` — one subset with one host's mask replaced per candidate (the
      removals of PTS).

    The default sparse and replacement evaluations build dense rows in batches of at most
    :data:`BATCH_CELLS` cells; the structured models evaluate them without dense rows.
    """

    vectorised: ClassVar[bool] = False
    """Whether a batch is evaluated by array operations (not one Python call per subset)."""

    def __init__(self, hosts: Sequence[Host]) -> None:
        self.hosts = tuple(hosts)

    @abstractmethod
    def value(self, masks: Sequence[int]) -> float:
        """``B(S)`` of the subset given by one mask per host (the reference evaluation)."""

    def batch(self, masks: np.ndarray) -> np.ndarray:
        """``B`` of every row of ``masks`` (shape ``(n, hosts)``); vectorised when possible."""
        return np.array([self.value(row) for row in np.asarray(masks, dtype=np.int64)])

    def batch_sparse(self, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``B`` of ``n`` subsets given sparsely: subset ``i`` takes mask ``masks[i, j]`` on host
        ``hosts[i, j]`` and nothing elsewhere (both of shape ``(n, w)``; the hosts of a row
        are distinct, a mask may be 0).

        Examples
        --------
        >>> from topoopt.gpuselect.models import TopologyModel
        >>> hosts = [Host("a", "A800", 8), Host("b", "A800", 8), Host("c", "A800", 8)]
        >>> bound = TopologyModel(inter_gbps=12.5).bind(hosts)
        >>> bound.batch_sparse([[0, 2], [1, 0]], [[0b101, 0b1], [0b1001, 0]]).tolist()
        [12.5, 200.0]
        >>> bound.batch(np.array([[0b101, 0, 0b1], [0, 0b1001, 0]])).tolist()
        [12.5, 200.0]
        """
        hosts = np.asarray(hosts, dtype=np.int64)
        masks = np.asarray(masks, dtype=np.int64)
        out = np.empty(len(hosts))
        rows = max(1, BATCH_CELLS // len(self.hosts))
        for start, stop in _chunks(len(hosts), rows):
            dense = np.zeros((stop - start, len(self.hosts)), dtype=np.int64)
            dense[np.arange(stop - start)[:, None], hosts[start:stop]] = masks[start:stop]
            out[start:stop] = self.batch(dense)
        return out

    def batch_replace(self, base: np.ndarray, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``B`` of ``n`` subsets, each the dense subset ``base`` with the mask of host
        ``hosts[i]`` replaced by ``masks[i]``.

        Examples
        --------
        >>> from topoopt.gpuselect.models import TopologyModel
        >>> links = ["X NV2 PIX SYS", "NV2 X SYS PIX", "PIX SYS X NV2", "SYS PIX NV2 X"]
        >>> model = TopologyModel(inter_gbps=12.5, topology={"P": [r.split() for r in links]})
        >>> bound = model.bind([Host("a", "P", 4)])
        >>> bound.batch_replace([0b1101], [0, 0, 0], [0b0101, 0b1001, 0b1100]).tolist()
        [31.5, 20.8, 50.0]
        """
        base = np.asarray(base, dtype=np.int64)
        hosts = np.asarray(hosts, dtype=np.int64)
        masks = np.asarray(masks, dtype=np.int64)
        out = np.empty(len(hosts))
        rows = max(1, BATCH_CELLS // len(self.hosts))
        for start, stop in _chunks(len(hosts), rows):
            dense = np.repeat(base[None, :], stop - start, axis=0)
            dense[np.arange(stop - start), hosts[start:stop]] = masks[start:stop]
            out[start:stop] = self.batch(dense)
        return out

    def chunk_rows(self, width: int) -> int:
        """How many candidates of ``width`` hosts a solver hands to :meth:`batch_sparse` (or
        :meth:`batch_replace`) at once: few for a model evaluated one subset at a time (so a
        time limit is checked often), enough to amortise the array operations otherwise."""
        if not self.vectorised:
            return 256
        return max(1, BATCH_CELLS // (8 * max(1, width)))

    def pairs(self, masks: Sequence[int]) -> list[tuple[str, int]]:
        """The subset as ``(host name, local index)`` pairs in host order."""
        return [
            (h.name, i) for h, m in zip(self.hosts, masks, strict=True) for i in indices_of(int(m))
        ]


class BandwidthModel(ABC):
    """A bandwidth model ``B(S)``: a value that binds to an instance's hosts.

    Subclasses are frozen dataclasses with value equality; :class:`StructuredModel`\\ s also
    convert from and to JSON.
    """

    kind: ClassVar[str]

    @abstractmethod
    def bind(self, hosts: Sequence[Host]) -> BoundModel:
        """Check the model covers ``hosts`` and return the evaluator for them."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the model (``{"model": kind, ...}``)."""

    def host_topology(self, host_type: str) -> Matrix | None:
        """The link matrix the model knows for ``host_type`` (default: Appendix E)."""
        return builtin_topology(host_type)
