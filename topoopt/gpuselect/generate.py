"""Instance generators of the gpuselect family (deterministic given the seed).

* :data:`CLUSTERS` — BandPilot Table 1: H100 (4 hosts x 8 H100), Het-RA (16 x 4090 +
  16 x A800), Het-VA (16 x V100 + 16 x A6000), Het-4Mix (8 GPUs of each of 4090, V100,
  A6000, A800). The inter-host fabric is the paper's (§5.1.1): a 400 Gb/s (50 GB/s)
  InfiniBand switch for H100, one quarter of it (12.5 GB/s) for the simulated clusters.
* :func:`protocol` — the evaluation protocol of §5.3: for every ``k`` from 1 to 32, 50
  availability scenarios (:func:`draw_availability`).
* :func:`random_small` — small random pools for oracle comparisons, every built-in model.
* :func:`large_pool` — pools of 256–1024 GPUs (beyond the paper).
* :func:`examples` — the conformance suite's fixed instances.

Intra-host bandwidth in the cluster suites is either the topology-derived model of the
paper's Appendix E matrices (the default; the 4090, V100 and A6000 matrices are read from the
data folders, :func:`~topoopt.gpuselect.topologies.builtin_topology`) or, with ``data_dir``, the
paper's simulator (:class:`~topoopt.gpuselect.models.BottleneckModel`) on the measured nccl-tests
tables of that folder — a path, or a data name such as :data:`MEASURED` (``data:hosts``, the
tables looked up in the data folders, :mod:`topoopt.core.datapath`). The tables are read when
the model is built, so ``to_dict`` of such an instance holds them inline; instance files that
must not copy them (the committed ``protocol-measured-*`` suites) write the model's JSON object
of :func:`measured_bandwidth`, which names them. So the cluster suites and :func:`large_pool`
need the data folders; :func:`random_small` and :func:`examples` need no data (their topology
instances carry random link matrices of :data:`SYNTHETIC_TYPES`, :func:`random_topology`).

Every generator checks its options first and raises
:class:`~topoopt.core.errors.InvalidOptionError` as ``"<option>: <rule>, got <value>"``
(``topoopt instances generate`` shows the option as ``--<option>``).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from topoopt.core.errors import InvalidOptionError
from topoopt.core.safejson import FileAccess
from topoopt.core.seeding import make_rng, normalize_seed
from topoopt.core.validate import option_int
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import format_mask
from topoopt.gpuselect.models import (
    BottleneckModel,
    StructuredModel,
    TableModel,
    TopologyModel,
)
from topoopt.gpuselect.topologies import NVSWITCH_LINKS

H100_INTER_GBPS = 50.0
"""400,000 Mb/s NVIDIA Quantum InfiniBand (BandPilot §5.1.1), in GB/s."""
SIMULATED_INTER_GBPS = H100_INTER_GBPS / 4
"""The simulated clusters' switch: one fourth of the H100 fabric (§5.1.1)."""

DATA_FILES: dict[str, list[str]] = {
    "H100": ["H100_node26_allreduce_16MiB.csv", "H100_node27_allreduce_16MiB.csv"],
    "4090": ["4090_bandwidth_16MiB.csv"],
    "A800": ["A800_bandwidth_16MiB.csv"],
    "V100": ["V100_bandwidth_16MiB.csv"],
    "A6000": ["A6000_bandwidth_16MiB.csv"],
}
"""File names of the measured tables in the data folder, per host type (two H100 hosts
were measured; their tables are averaged entry by entry)."""
MEASURED = "data:hosts"
"""The measured tables' folder as a data name: ``hosts/`` of the data folders (by default
``shared/data`` beside the checkout; ``TOPOOPT_DATA``)."""

MAX_COUNT = 100_000
"""Most instances one generator call makes (``count``, ``len(ks) * scenarios``)."""
MAX_POOL_GPUS = 1_048_576
"""Most GPUs of a :func:`large_pool` pool."""


def _option_ks(ks: Any, high: int, times: int = 1) -> tuple[int, ...]:
    """``ks`` as a tuple of distinct request sizes in ``[1, high]`` (at most
    ``MAX_COUNT // times`` of them), or an error naming the option ``ks``.

    Examples
    --------
    >>> _option_ks(range(1, 4), 32)
    (1, 2, 3)
    >>> _option_ks(8, 32)
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidOptionError: ks: must be a list of integers in [1, 32], got 8
    """
    if isinstance(ks, (str, bytes, Mapping)) or not isinstance(ks, Iterable):
        raise InvalidOptionError(f"ks: must be a list of integers in [1, {high}], got {ks!r}")
    items = tuple(ks)
    most = max(1, MAX_COUNT // times)
    if not 1 <= len(items) <= most:
        raise InvalidOptionError(f"ks: must hold 1 to {most} request sizes, got {len(items)}")
    rule = f"ks: must be a list of integers in [1, {high}], got"
    for k in items:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= int(k) <= high:
            raise InvalidOptionError(f"{rule} {k!r} in it")
    values = tuple(int(k) for k in items)
    if len(set(values)) != len(values):
        raise InvalidOptionError(f"ks: must not repeat a request size, got {list(values)}")
    return values


@dataclass(frozen=True)
class Cluster:
    """One cluster of BandPilot Table 1."""

    name: str
    types: tuple[str, ...]
    """Host type of each 8-GPU host, in order."""
    inter_gbps: float

    def hosts(self, available: Sequence[Sequence[int]] | None = None) -> tuple[Host, ...]:
        """The hosts (``n0``, ``n1``, ...), all GPUs idle unless ``available`` is given."""
        avail = available or [range(8)] * len(self.types)
        return tuple(
            Host(f"n{j}", t, 8, a) for j, (t, a) in enumerate(zip(self.types, avail, strict=True))
        )


CLUSTERS: dict[str, Cluster] = {
    "h100": Cluster("h100", ("H100",) * 4, H100_INTER_GBPS),
    "het-ra": Cluster("het-ra", ("4090",) * 2 + ("A800",) * 2, SIMULATED_INTER_GBPS),
    "het-va": Cluster("het-va", ("V100",) * 2 + ("A6000",) * 2, SIMULATED_INTER_GBPS),
    "het-4mix": Cluster("het-4mix", ("4090", "V100", "A6000", "A800"), SIMULATED_INTER_GBPS),
}


def measured_bandwidth(
    cluster: Cluster, data_dir: str = MEASURED, gpus_per_nic: int | None = None
) -> dict[str, Any]:
    """The JSON object of the cluster's measured bottleneck model, naming its tables
    (:data:`DATA_FILES` in ``data_dir``) rather than holding them.

    Examples
    --------
    >>> measured_bandwidth(CLUSTERS["het-va"])["intra"]["V100"]
    ['data:hosts/V100_bandwidth_16MiB.csv']
    """
    base = data_dir.rstrip("/")
    return {
        "model": BottleneckModel.kind,
        "intra": {t: [f"{base}/{f}" for f in DATA_FILES[t]] for t in sorted(set(cluster.types))},
        "inter_gbps": cluster.inter_gbps,
        "gpus_per_nic": gpus_per_nic,
    }


def cluster_model(
    cluster: Cluster, data_dir: str | None = None, gpus_per_nic: int | None = None
) -> StructuredModel:
    """The cluster's bandwidth model: topology-derived, or measured tables from ``data_dir``.

    The tables of :data:`DATA_FILES` are read from ``data_dir`` (a folder relative to the
    working directory, or a data name such as :data:`MEASURED`) when the model is built; several
    tables of one type are averaged entry by entry.
    """
    if data_dir is None:
        return TopologyModel(inter_gbps=cluster.inter_gbps, gpus_per_nic=gpus_per_nic)
    return BottleneckModel.from_dict(
        measured_bandwidth(cluster, data_dir, gpus_per_nic), files=FileAccess(allow=True)
    )


def draw_availability(rng: np.random.Generator, gpus: int, k: int) -> np.ndarray:
    """A random availability scenario for a request of ``k`` of ``gpus`` GPUs.

    The number of busy GPUs ``u`` is uniform on ``0 .. gpus - k``; the busy GPUs are a
    uniformly random ``u``-subset. Returns the sorted global indices of the idle GPUs.
    """
    busy = int(rng.integers(0, gpus - k + 1))
    idle = rng.permutation(gpus)[busy:]
    return np.sort(idle)


def scenario_hosts(cluster: Cluster, idle: np.ndarray) -> tuple[Host, ...]:
    """The cluster's hosts with the idle global GPU indices ``idle`` (8 per host)."""
    per_host: list[list[int]] = [[] for _ in cluster.types]
    for g in idle.tolist():
        per_host[g // 8].append(g % 8)
    return cluster.hosts(per_host)


def protocol(
    seed: int = 0,
    cluster: str = "h100",
    scenarios: int = 50,
    ks: Sequence[int] = tuple(range(1, 33)),
    data_dir: str | None = None,
    gpus_per_nic: int | None = None,
) -> list[GpuSelectInstance]:
    """BandPilot §5.3: ``scenarios`` seeded availability scenarios for every ``k`` in ``ks``.

    Scenario ``s`` of request ``k`` draws from ``numpy.random.default_rng([seed, k, s])``
    (:func:`draw_availability`), so every cluster sees the same draws. Names look like
    ``h100-k8-s3``.

    Options: ``cluster`` one of :data:`CLUSTERS`; ``scenarios`` >= 1 and ``ks`` distinct sizes
    from 1 to the cluster's GPUs, at most :data:`MAX_COUNT` instances in all; ``data_dir`` a
    folder name or ``None``; ``gpus_per_nic`` in [1, 8] or ``None``.
    """
    seed = normalize_seed(seed)
    if not isinstance(cluster, str) or cluster not in CLUSTERS:
        known = ", ".join(CLUSTERS)
        raise InvalidOptionError(f"cluster: must be one of {known}, got {cluster!r}")
    scenarios = option_int("scenarios", scenarios, 1, MAX_COUNT)
    ks = _option_ks(ks, 8 * len(CLUSTERS[cluster].types), times=scenarios)
    if data_dir is not None and (not isinstance(data_dir, str) or not data_dir):
        raise InvalidOptionError(f"data_dir: must be a folder name, got {data_dir!r}")
    if gpus_per_nic is not None:
        gpus_per_nic = option_int("gpus_per_nic", gpus_per_nic, 1, 8)
    spec = CLUSTERS[cluster]
    model = cluster_model(spec, data_dir, gpus_per_nic)
    gpus = 8 * len(spec.types)
    out = []
    for k in ks:
        for s in range(scenarios):
            idle = draw_availability(np.random.default_rng([seed, k, s]), gpus, k)
            out.append(
                GpuSelectInstance(
                    f"{cluster}-k{k}-s{s}", k, scenario_hosts(spec, idle), model, cluster=cluster
                )
            )
    return out


def random_tables(
    rng: np.random.Generator, types: Sequence[str], gpus: int, low: float = 1.0, high: float = 100.0
) -> dict[str, dict[str, float]]:
    """Random inline intra tables (every subset of ``gpus`` GPUs; single GPUs read 0)."""
    out = {}
    for t in types:
        table = {}
        for size in range(1, gpus + 1):
            for combo in itertools.combinations(range(gpus), size):
                mask = sum(1 << i for i in combo)
                value = 0.0 if size == 1 else round(float(rng.uniform(low, high)), 1)
                table[format_mask(mask)] = value
        out[t] = table
    return out


def random_cross(
    rng: np.random.Generator,
    hosts: Sequence[Host],
    interchangeable: bool,
    low: float = 1.0,
    high: float = 100.0,
) -> list[dict[str, Any]]:
    """A complete random cross table over every count vector the hosts can realise."""
    ranges = [range(h.n_available + 1) for h in hosts]
    keys = set()
    for counts in itertools.product(*ranges):
        if sum(1 for c in counts if c) < 2:
            continue
        keys.add(
            tuple(sorted((c for c in counts if c), reverse=True)) if interchangeable else counts
        )
    return [
        {"counts": list(key), "gbps": round(float(rng.uniform(low, high)), 1)}
        for key in sorted(keys)
    ]


MODEL_KINDS = ("table", "table-ordered", "bottleneck", "bottleneck-nic", "topology")
"""Model variants of :func:`random_instance` (``table-ordered``: hosts not interchangeable)."""
SYNTHETIC_TYPES = ("P", "Q")
"""Host types of the generated instances whose link matrices are drawn
(:func:`random_topology`) and carried by the instance, so that it needs no data."""
LINK_TOKENS = ("NV1", "NV2", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS")
"""The ``nvidia-smi topo -m`` link types :func:`random_topology` draws from."""


def random_topology(rng: np.random.Generator, gpus: int) -> tuple[tuple[str, ...], ...]:
    """A random symmetric ``nvidia-smi topo -m`` matrix of ``gpus`` GPUs: every pair's link
    drawn uniformly from :data:`LINK_TOKENS`, ``X`` on the diagonal.

    Examples
    --------
    >>> matrix = random_topology(make_rng(0), 3)
    >>> [row[i] for i, row in enumerate(matrix)], matrix[0][2] == matrix[2][0]
    (['X', 'X', 'X'], True)
    """
    links = [["X"] * gpus for _ in range(gpus)]
    for i, j in itertools.combinations(range(gpus), 2):
        links[i][j] = links[j][i] = str(rng.choice(LINK_TOKENS))
    return tuple(tuple(row) for row in links)


def random_instance(
    rng: np.random.Generator,
    kind: str,
    name: str = "random",
    max_hosts: int = 4,
    max_pool: int = 12,
) -> GpuSelectInstance:
    """A small random instance under one of :data:`MODEL_KINDS` (pool <= ``max_pool``).

    ``topology`` hosts are of :data:`SYNTHETIC_TYPES` (random matrices, carried by the model)
    or of the NVSwitch types A800 and H100 (built in by rule): no data is needed.
    """
    n_hosts = int(rng.integers(1, max_hosts + 1))
    gpus = int(rng.choice([4, 8])) if kind.startswith("topology") else int(rng.integers(2, 6))
    types = [*SYNTHETIC_TYPES, *NVSWITCH_LINKS] if kind == "topology" else list(SYNTHETIC_TYPES)
    hosts = []
    for j in range(n_hosts):
        n_idle = int(rng.integers(1, gpus + 1))
        idle = rng.choice(gpus, size=n_idle, replace=False)
        hosts.append(Host(f"n{j}", rng.choice(types), gpus, idle))
    while sum(h.n_available for h in hosts) > max_pool:
        last = hosts[-1]
        hosts[-1] = Host(last.name, last.type, last.gpus, last.available[:-1])
        if not hosts[-1].available:
            hosts.pop()
    pool = sum(h.n_available for h in hosts)
    k = int(rng.integers(1, pool + 1))
    inter = round(float(rng.uniform(1.0, 100.0)), 1)
    model: StructuredModel
    host_types = sorted({h.type for h in hosts})
    if kind in ("table", "table-ordered"):
        interchangeable = kind == "table"
        model = TableModel(
            intra=random_tables(rng, host_types, gpus),
            cross=random_cross(rng, hosts, interchangeable),
            interchangeable_hosts=interchangeable,
        )
    elif kind in ("bottleneck", "bottleneck-nic"):
        nic = int(rng.integers(1, gpus + 1)) if kind == "bottleneck-nic" else None
        model = BottleneckModel(
            inter_gbps=inter, gpus_per_nic=nic, intra=random_tables(rng, host_types, gpus)
        )
    elif kind == "topology":
        model = TopologyModel(
            inter_gbps=inter,
            gpus_per_nic=int(rng.integers(1, gpus + 1)) if rng.random() < 0.5 else None,
            topology={t: random_topology(rng, gpus) for t in host_types if t in SYNTHETIC_TYPES},
        )
    else:
        raise ValueError(f"unknown model kind {kind!r}; one of {MODEL_KINDS}")
    return GpuSelectInstance(name, k, hosts, model)


def random_small(seed: int = 0, count: int = 20) -> list[GpuSelectInstance]:
    """``count`` small random instances cycling through :data:`MODEL_KINDS`.

    ``count`` lies in [1, :data:`MAX_COUNT`].
    """
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    rng = make_rng(seed)
    return [
        random_instance(
            rng,
            MODEL_KINDS[i % len(MODEL_KINDS)],
            name=f"small-{seed}-{i}-{MODEL_KINDS[i % len(MODEL_KINDS)]}",
        )
        for i in range(count)
    ]


def large_pool(
    seed: int = 0, gpus: int = 1024, ks: Sequence[int] = (8, 32, 64, 128), busy: float = 0.3
) -> list[GpuSelectInstance]:
    """Pools of ``gpus`` GPUs: 8-GPU hosts of the four simulated types in turn, each GPU busy
    with probability ``busy``; topology-derived model, 12.5 GB/s fabric. Names
    ``large<gpus>-k<k>``.

    Options: ``gpus`` a multiple of 8 in [8, :data:`MAX_POOL_GPUS`]; ``ks`` distinct sizes in
    [1, ``gpus``]; ``busy`` a probability in [0, 1). A draw may still leave fewer idle GPUs
    than a request: that instance is then refused (``k: requests ...``).
    """
    seed = normalize_seed(seed)
    gpus = option_int("gpus", gpus, 8, MAX_POOL_GPUS)
    if gpus % 8:
        raise InvalidOptionError(f"gpus: must be a multiple of 8 (8-GPU hosts), got {gpus}")
    ks = _option_ks(ks, gpus)
    if (
        isinstance(busy, bool)
        or not isinstance(busy, numbers.Real)
        or not math.isfinite(busy)
        or not 0 <= busy < 1
    ):
        raise InvalidOptionError(f"busy: must be a probability in [0, 1), got {busy!r}")
    model = TopologyModel(inter_gbps=SIMULATED_INTER_GBPS)
    return _pool(
        make_rng(seed), f"large{gpus}", gpus, ("4090", "V100", "A6000", "A800"), model, ks, busy
    )


def _pool(
    rng: np.random.Generator,
    cluster: str,
    gpus: int,
    types: Sequence[str],
    model: TopologyModel,
    ks: Sequence[int],
    busy: float,
) -> list[GpuSelectInstance]:
    """``gpus // 8`` hosts of 8 GPUs, of ``types`` in turn, each GPU busy with probability
    ``busy``; one instance ``<cluster>-k<k>`` per ``k``."""
    hosts = []
    for j in range(gpus // 8):
        idle = tuple(i for i in range(8) if rng.random() >= busy)
        hosts.append(Host(f"n{j}", types[j % len(types)], 8, idle))
    return [GpuSelectInstance(f"{cluster}-k{k}", k, hosts, model, cluster=cluster) for k in ks]


def examples() -> list[GpuSelectInstance]:
    """Fixed small instances for the conformance suite (the oracle solves each at once).

    The first is the paper's Fig. 1 setting: two H100 hosts with 6 idle GPUs each and a
    request of 8, with NIC sharing beyond 4 GPUs per host so that 4+4 beats 6+2. The
    topology-model ones mix the NVSwitch hosts (A800, H100) with hosts of
    :data:`SYNTHETIC_TYPES` whose random link matrices the model carries: no data is needed.
    """
    fig1 = CLUSTERS["h100"].hosts([range(6), range(2, 8), [], []])[:2]
    nic_model = TopologyModel(inter_gbps=H100_INTER_GBPS, gpus_per_nic=4)
    mix = (
        Host("n0", "P", 8, (0, 1, 4)),
        Host("n1", "Q", 8, (0, 2, 3, 7)),
        Host("n2", "A800", 8, (2, 3, 6)),
        Host("n3", "H100", 8, (1, 5)),
    )
    pq = (Host("n0", "P", 8, (0, 1, 2, 3, 4)), Host("n1", "Q", 8, (1, 2, 5, 6)))
    rng = make_rng(7)
    t_hosts = (
        Host("a", "P", 4, (0, 1, 2, 3)),
        Host("b", "P", 4, (1, 2, 3)),
        Host("c", "Q", 4, (0, 3)),
    )
    table = TableModel(
        intra=random_tables(rng, ["P", "Q"], 4), cross=random_cross(rng, t_hosts, True)
    )
    mix_model = TopologyModel(
        inter_gbps=SIMULATED_INTER_GBPS,
        topology={t: random_topology(rng, 8) for t in SYNTHETIC_TYPES},
    )
    return [
        GpuSelectInstance("h100-fig1-k8", 8, fig1, nic_model, cluster="h100"),
        GpuSelectInstance("mix-k6", 6, mix, mix_model),
        GpuSelectInstance("pq-k3", 3, pq, mix_model),
        GpuSelectInstance("table-k5", 5, t_hosts, table),
        GpuSelectInstance("mix-k1", 1, mix, mix_model),
    ]


def _protocol_suite(cluster: str) -> Callable[..., list[GpuSelectInstance]]:
    return partial(protocol, cluster=cluster)


def slow_examples() -> list[GpuSelectInstance]:
    """The instance on which the solvers need the longest (the time-limit check of the
    conformance suite): 512 GPUs out of a pool of 8,192, as :func:`large_pool`'s but with
    hosts of :data:`SYNTHETIC_TYPES` (random link matrices) for the types read from data, so
    that it needs no data."""
    rng = make_rng(0)
    model = TopologyModel(
        inter_gbps=SIMULATED_INTER_GBPS,
        topology={t: random_topology(rng, 8) for t in SYNTHETIC_TYPES},
    )
    return _pool(
        rng, "synthetic8192", 8192, (*SYNTHETIC_TYPES, *NVSWITCH_LINKS), model, (512,), 0.3
    )


GENERATORS: dict[str, Callable[..., list[GpuSelectInstance]]] = {
    **{f"protocol-{c}": _protocol_suite(c) for c in CLUSTERS},
    "random-small": random_small,
    "large-pool": large_pool,
}
"""Suites for ``topoopt instances generate gpuselect --suite NAME --seed N``."""
