"""Host topologies: the paper's Appendix E matrices, link bandwidths, and ring bandwidth.

The built-in matrices are Tables 4–8 of BandPilot's Appendix E (4090, V100, A6000, A800;
"H100 has the same topology as A800, with NV16 connecting each GPU"): the NVSwitch hosts'
by their rule, the others read from the data folders (``data:hosts/<type>_topo.md``, the
shared measurement data); without those an instance gives its hosts' matrices itself.

Link bandwidths (GB/s, one direction, between two GPUs) come from public hardware specs:

* ``NV#`` — ``#`` bonded NVLinks at 25 GB/s each per direction (NVLink 2.0 on V100,
  3.0 on A100/A800, 4.0 on H100 all run 25 GB/s per link and direction); on the RTX A6000
  the NVLink bridge gives 112.5 GB/s bidirectional over 4 links, i.e. 14.0625 GB/s per link
  and direction.
* ``PIX``, ``PXB``, ``PHB``, ``NODE`` — PCIe x16 of the host's generation (Gen3 15.75 GB/s
  for the V100 host, Gen4 31.5 GB/s otherwise), the peer traffic staying on PCIe.
* ``SYS`` — crosses the CPU socket interconnect: the smaller of the PCIe rate and one Intel
  UPI link (10.4 GT/s x 2 bytes = 20.8 GB/s).

:func:`ring_bandwidths` turns a matrix into the topology-derived intra-host model: the
bandwidth of a subset is the bottleneck link of its best ring (Hamiltonian cycle).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from topoopt.core.datapath import DataNotFoundError, resolve
from topoopt.gpuselect.loaders import parse_topology

NVLINK_GBPS_PER_LINK = 25.0
PCIE_GEN3_X16_GBPS = 15.75
PCIE_GEN4_X16_GBPS = 31.5
UPI_LINK_GBPS = 20.8

APPENDIX_E_TYPES = ("4090", "V100", "A6000", "A800", "H100")
"""Host types with an ``nvidia-smi topo -m`` matrix in BandPilot's Appendix E (Tables 4–8)."""
NVSWITCH_LINKS = {"A800": 8, "H100": 16}
"""The NVSwitch hosts of Appendix E: every pair of their 8 GPUs is joined by this many NVLinks
(``NV8``; "H100 has the same topology as A800, with NV16 connecting each GPU"), a rule and no
table. The other hosts' matrices are measurement data the project does not copy: they are
read from the data folders (:mod:`topoopt.core.datapath`) as ``data:hosts/<type>_topo.md``."""

_PCIE_GEN: dict[str, float] = {"V100": PCIE_GEN3_X16_GBPS}
_NVLINK_PER_LINK: dict[str, float] = {"A6000": 112.5 / 2 / 4}

SLURM_WEIGHTS: dict[str, float] = {"SYS": 1, "NODE": 2, "PHB": 3, "PXB": 4, "PIX": 5}
"""Ordinal link weights of the topology-compactness baseline (Alg. 5): the kind of weights
a Slurm topology file assigns. ``NV#`` weighs ``10 + #``; GPUs on different hosts weigh 0."""


def builtin_topology(host_type: str) -> tuple[tuple[str, ...], ...] | None:
    """The Appendix E matrix of ``host_type``: by :data:`NVSWITCH_LINKS`, or from the data
    folders (``data:hosts/<type>_topo.md``); ``None`` when the paper has none or no data folder
    holds it (the instance must then give the matrix)."""
    if host_type not in APPENDIX_E_TYPES:
        return None
    if host_type in NVSWITCH_LINKS:
        link = f"NV{NVSWITCH_LINKS[host_type]}"
        return tuple(tuple("X" if i == j else link for j in range(8)) for i in range(8))
    reference = f"data:hosts/{host_type}_topo.md"
    try:
        path = resolve(reference, "bandwidth.topology")
    except DataNotFoundError:
        return None
    return _read_topology(path, reference)


@functools.lru_cache(maxsize=len(APPENDIX_E_TYPES))
def _read_topology(path: Path, reference: str) -> tuple[tuple[str, ...], ...]:
    """The matrix in the file ``path`` (read once per file)."""
    return parse_topology(path.read_text(encoding="utf-8"), reference)


def default_link_gbps(host_type: str) -> dict[str, float]:
    """Public-spec link bandwidths (GB/s per direction) for ``host_type`` (module docstring).

    ``NV#`` is given for ``#`` = 1..18.

    Examples
    --------
    >>> default_link_gbps("V100")["NV2"], default_link_gbps("4090")["SYS"]
    (50.0, 20.8)
    """
    pcie = _PCIE_GEN.get(host_type, PCIE_GEN4_X16_GBPS)
    per_link = _NVLINK_PER_LINK.get(host_type, NVLINK_GBPS_PER_LINK)
    links = {name: pcie for name in ("PIX", "PXB", "PHB", "NODE")}
    links["SYS"] = min(pcie, UPI_LINK_GBPS)
    links.update({f"NV{n}": n * per_link for n in range(1, 19)})
    return links


def slurm_weight(link: str) -> float:
    """Weight of a link type for the Topo baseline (:data:`SLURM_WEIGHTS`)."""
    match = re.fullmatch(r"NV(\d+)", link)
    if match:
        return 10.0 + int(match.group(1))
    return SLURM_WEIGHTS.get(link, 0.0)


@dataclass(frozen=True)
class LinkMatrix:
    """A host's GPU-to-GPU link types and their bandwidths."""

    links: tuple[tuple[str, ...], ...]

    @property
    def gpus(self) -> int:
        return len(self.links)

    def numeric(self, values: Mapping[str, float], source: str) -> np.ndarray:
        """The matrix with every link replaced by ``values[link]`` (diagonal 0)."""
        from topoopt.core.errors import InvalidInstanceError

        n = self.gpus
        out = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                link = self.links[i][j]
                if link not in values:
                    raise InvalidInstanceError(source, f"no bandwidth given for link type {link}")
                out[i, j] = float(values[link])
        return out


def ring_bandwidths(bw: np.ndarray) -> np.ndarray:
    """For every subset mask of a host, the bottleneck link of its best ring (GB/s).

    ``result[mask]`` is ``max over Hamiltonian cycles C of S of min over edges of C`` of the
    link bandwidths ``bw``; a pair's ring is its single link; single GPUs and the empty set
    get 0 (no collective traffic, as nccl-tests reports for one GPU).

    Examples
    --------
    >>> bw = np.array([[0, 9, 1], [9, 0, 5], [1, 5, 0]], dtype=float)
    >>> ring_bandwidths(bw).tolist()
    [0.0, 0.0, 0.0, 9.0, 0.0, 1.0, 5.0, 1.0]
    """
    n = bw.shape[0]
    full = 1 << n
    result = np.zeros(full)
    thresholds = sorted({float(x) for x in bw[~np.eye(n, dtype=bool)]}, reverse=True)
    done = np.zeros(full, dtype=bool)
    for mask in range(full):
        if mask.bit_count() < 2:
            done[mask] = True
    for t in thresholds:
        adj = [sum(1 << j for j in range(n) if j != i and bw[i, j] >= t) for i in range(n)]
        for todo in np.flatnonzero(~done):
            if _has_cycle(int(todo), adj):
                result[todo] = t
                done[todo] = True
        if done.all():
            break
    return result


def _has_cycle(mask: int, adj: list[int]) -> bool:
    """Whether the GPUs of ``mask`` have a Hamiltonian cycle in the graph ``adj`` (bitsets)."""
    start = (mask & -mask).bit_length() - 1
    if mask.bit_count() == 2:
        return bool(adj[start] & mask & ~(1 << start))
    # Held-Karp: (visited set, end vertex) pairs of paths from the lowest GPU of the mask.
    frontier = {(1 << start, start)}
    for _ in range(mask.bit_count() - 1):
        nxt = set()
        for seen, v in frontier:
            options = adj[v] & mask & ~seen
            while options:
                low = options & -options
                nxt.add((seen | low, low.bit_length() - 1))
                options ^= low
        frontier = nxt
    return any(adj[v] >> start & 1 for seen, v in frontier if seen == mask)
