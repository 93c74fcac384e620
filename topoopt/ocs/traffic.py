"""What a job sends in one communication phase: bytes between pods and through each ToR.

The traffic model of ``docs/ocs.md`` (spec ``ocs.md``; paper eq. 4-5 read coherently). ``F`` is
the job's ``traffic_bytes``, ``G_i`` its GPUs on pod ``i``, ``G`` their sum:

* **PS**, server on pod ``s``: in the push phase every worker sends ``F`` to the server, so pod
  ``i != s`` sends ``G_i·F`` over the OXC to ``s``; the pull phase is the reverse.
* **RAR**, pods in ring order ``c_0 .. c_{k-1}``: the ring visits the GPUs of each pod in turn
  and every GPU sends ``2F`` (reduce-scatter plus all-gather; the ``(G-1)/G`` factor of the
  exact algorithm is left out, an upper bound) to its successor, so each ring edge
  ``c_t -> c_{t+1}`` carries ``2F``; two pods are joined by both ring edges (``4F``).
* **A2A**: each GPU sends ``F/(G-1)`` to each other GPU, so pod ``i`` sends
  ``G_i·G_j·F/(G-1)`` to pod ``j``.

Circuits are half-duplex, so a pod pair's demand is the sum of both directions
(:attr:`Demand.pairs`). The ToR links between a pod's servers and its switch are full duplex:
:attr:`Demand.sent` and :attr:`Demand.received` count the bytes the pod's GPUs (and PS servers)
send and receive, intra-pod transfers included (each crosses the ToR once each way).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

Pair = tuple[int, int]
"""Two pod numbers ``(a, b)`` with ``a < b``."""


def pair(a: int, b: int) -> Pair:
    """The pair of pods ``a`` and ``b`` in order."""
    return (a, b) if a < b else (b, a)


@dataclass
class Demand:
    """The bytes of one communication phase.

    Attributes
    ----------
    pairs
        Bytes between two pods over the OXC, both directions summed (half-duplex circuits).
    sent, received
        Bytes the pod's GPUs and servers send and receive through the ToR, per pod.
    """

    pairs: dict[Pair, float] = field(default_factory=dict)
    sent: list[float] = field(default_factory=list)
    received: list[float] = field(default_factory=list)

    @classmethod
    def empty(cls, n_pods: int) -> Demand:
        """No traffic on ``n_pods`` pods."""
        return cls({}, [0.0] * n_pods, [0.0] * n_pods)

    def add(self, other: Demand) -> None:
        """Add ``other``'s bytes to these (in place)."""
        for key, amount in other.pairs.items():
            self.pairs[key] = self.pairs.get(key, 0.0) + amount
        self.sent[:] = [a + b for a, b in zip(self.sent, other.sent, strict=True)]
        self.received[:] = [a + b for a, b in zip(self.received, other.received, strict=True)]

    def add_at(self, other: Demand, pods: Iterable[int]) -> None:
        """:meth:`add` for a demand whose ToR bytes are zero outside ``pods`` (a job's own
        pods): the same sums (adding 0.0 changes no float), in ``O(len(pods))``."""
        for key, amount in other.pairs.items():
            self.pairs[key] = self.pairs.get(key, 0.0) + amount
        for i in pods:
            self.sent[i] += other.sent[i]
            self.received[i] += other.received[i]

    def plus(self, other: Demand) -> Demand:
        """A new demand: these bytes and ``other``'s (neither is changed)."""
        out = Demand(dict(self.pairs), list(self.sent), list(self.received))
        out.add(other)
        return out

    def tor_bytes(self) -> list[float]:
        """The busier direction of each pod's ToR links: ``max(sent, received)``."""
        return [max(s, r) for s, r in zip(self.sent, self.received, strict=True)]


def ring_edges(ring: Sequence[int]) -> list[Pair]:
    """The pod pairs of a ring, one per ring edge (two pods: the pair twice; one pod: none).

    Examples
    --------
    >>> ring_edges([2, 0, 1]), ring_edges([3, 1]), ring_edges([4])
    ([(0, 2), (0, 1), (1, 2)], [(1, 3), (1, 3)], [])
    """
    k = len(ring)
    if k < 2:
        return []
    return [pair(ring[t], ring[(t + 1) % k]) for t in range(k)]


def job_demand(
    n_pods: int,
    kind: str,
    gpus: Sequence[tuple[int, int]],
    traffic_bytes: float,
    *,
    server: int | None = None,
    ring: Sequence[int] | None = None,
) -> Demand:
    """One job's bytes in one communication phase (module docstring).

    Parameters
    ----------
    n_pods
        Pods of the network.
    kind
        ``"PS"``, ``"RAR"`` or ``"A2A"``.
    gpus
        ``(pod number, GPUs)`` of the job.
    traffic_bytes
        ``F``.
    server
        The PS server's pod (PS only).
    ring
        The pods in ring order (RAR only).

    Examples
    --------
    >>> d = job_demand(3, "PS", [(0, 2), (1, 1), (2, 1)], 10.0, server=0)
    >>> d.pairs, d.sent, d.received
    ({(0, 1): 10.0, (0, 2): 10.0}, [20.0, 10.0, 10.0], [40.0, 0.0, 0.0])
    >>> job_demand(2, "RAR", [(0, 2), (1, 2)], 10.0, ring=[0, 1]).pairs
    {(0, 1): 40.0}
    >>> job_demand(2, "A2A", [(0, 2), (1, 1)], 10.0).pairs
    {(0, 1): 20.0}
    """
    f = traffic_bytes
    demand = Demand.empty(n_pods)
    total = sum(g for _, g in gpus)
    if kind == "PS":
        if server is None:
            raise ValueError("a PS job's demand needs its server pod")
        for pod, g in gpus:
            demand.sent[pod] += g * f
            if pod != server:
                key = pair(pod, server)
                demand.pairs[key] = demand.pairs.get(key, 0.0) + g * f
        demand.received[server] += total * f
    elif kind == "RAR":
        if ring is None:
            raise ValueError("a RAR job's demand needs its ring")
        for key in ring_edges(ring):
            demand.pairs[key] = demand.pairs.get(key, 0.0) + 2 * f
        for pod, g in gpus:
            demand.sent[pod] += 2 * g * f
            demand.received[pod] += 2 * g * f
    elif kind == "A2A":
        share = f / (total - 1)
        for x, (a, ga) in enumerate(gpus):
            demand.sent[a] += ga * f
            demand.received[a] += ga * f
            for b, gb in gpus[x + 1 :]:
                demand.pairs[pair(a, b)] = 2 * ga * gb * share
    else:
        raise ValueError(f"unknown job type {kind!r}")
    return demand


def total_demand(n_pods: int, parts: Iterable[Demand]) -> Demand:
    """The sum of several jobs' demands."""
    import numpy as np

    pairs: dict[Pair, float] = {}
    sent, received = [], []
    for part in parts:
        for key, amount in part.pairs.items():
            pairs[key] = pairs.get(key, 0.0) + amount
        sent.append(part.sent)
        received.append(part.received)
    if not sent:
        return Demand.empty(n_pods)
    return Demand(
        pairs,
        np.array(sent).sum(axis=0).tolist(),
        np.array(received).sum(axis=0).tolist(),
    )


__all__ = ["Demand", "Pair", "job_demand", "pair", "ring_edges", "total_demand"]
