r"""SpiderFlow's cost model: the step time of a job spread over decentralized clusters.

A job of ``G`` GPUs trains a :class:`~topoopt.sim.crosscluster.models.Model` with ``d``
data-parallel replicas of a ``p``-stage pipeline, ``d · p = G`` (no tensor parallelism,
SpiderFlow §2.2.1); GPU ``(j, s)`` runs stage ``s`` of replica ``j`` (a :class:`Layout` says
which cluster and node it is on). One training step, in the terms of SpiderFlow's
``T_cluster = T_comp + α·T_dp + β·T_pp`` (§4.2, with ``α = β = 1`` and, for the pipeline
boundaries that cross clusters, eq. 9's costs: traffic over the widest-path bandwidth of
eq. 1)::

    M      = k · G                          micro-batches of one sequence per step (k per GPU)
    m      = ceil(M / d)                    micro-batches per replica
    c      = ceil(L / p) / L · 6 · N · S / F              compute of the slowest stage per
                                                          micro-batch (forward + backward)
    T_comp = (m + p - 1) · c                              1F1B / GPipe: bubble (p - 1) / m
    T_dp   = max_s 2 (d - 1) / d · g_s / B_dp(s)          ring all-reduce of stage s's
                                                          gradients g_s over its d GPUs
    T_pp   = max_j m · Σ_{s < p-1} A / B(j, s)            activations forward and gradients
                                                          back across each stage boundary
    T_step = T_comp + T_dp + T_pp                         (no overlap)

with ``N`` parameters, ``L`` layers, hidden size ``h``, sequence length ``S``,
``g_s = 2 · N · ceil(L / p) / L`` bytes (fp16 gradients of the largest stage),
``A = 2 · S · h · 2`` bytes (an fp16 activation of one sequence, forward and backward), and
bandwidths in bytes/s (a description's Gb/s times ``10⁹ / 8``):

* ``B(j, s)`` between the GPUs of stages ``s`` and ``s + 1`` of replica ``j``: the cluster's
  intra-node bandwidth on one node, its inter-node bandwidth on two nodes of a cluster, the
  widest-path bandwidth ``β`` between two clusters (eq. 1);
* ``B_dp(s)``, the ring's bottleneck: the smallest of the bandwidths the group of stage ``s``
  spans — ``min β`` over pairs of its clusters (the bottleneck of eq. 1 over a set) when it
  spans several, the inter-node bandwidth of every cluster where it spans several nodes, the
  intra-node bandwidth of every node holding two or more of its GPUs.

**Constants.** The bandwidths are the description's: §5.5's simulator has 25 GB/s inside a
node, 1 GB/s between nodes, 5 Gb/s between clusters (``topoopt.crosscluster.settings``).
``F``, the effective compute rate of a GPU, is calibrated on SpiderFlow Fig. 1 (left): GPT-2
1.3B, batch size 1, four A100s in one cluster (the testbed's 4-GPU server, NVLink 25 GB/s)
spend about 13 % of a step in the all-reduce, so ``F = 6 · N · S / T_comp`` with ``T_comp =
T_dp · 0.87 / 0.13`` and ``T_dp = 2 · 3/4 · 2.6 GB / 25 GB/s = 0.156 s``: ``F ≈ 7.65`` TFLOP/s
(:data:`EFFECTIVE_FLOPS`; far below an A100's peak: it holds every non-communication cost of
a step at batch size 1). The same model then gives Fig. 1's other end: over four clusters at
10 Gb/s (A.2's links) the all-reduce takes 75 % of the step ("over 70 %") and throughput drops
3.5 times ("more than 2x"). ``k = 1`` (:data:`MICRO_BATCHES_PER_GPU`): Fig. 1's batch size.

**Running time** (:func:`slowdown`). A trace gives a job's running time ``D`` on its own
cluster; the simulator takes it as the time on the job's *reference placement* — its GPUs on
the fewest nodes of one cluster of the description's largest nodes and best bandwidths, under
the best configuration TPA finds there — so the job runs ``D / T_ref`` steps and, placed
elsewhere, ``JCT - queueing = D · T_step / T_ref``. A placement that beats the reference runs
at the reference time (the slowdown is at least 1).

Examples
--------
>>> import numpy as np
>>> from topoopt.sim.crosscluster.models import CATALOG
>>> net = Network(("a",), np.array([200.0]), np.array([8.0]), np.array([[np.inf]]))
>>> one_node = Layout(np.zeros((4, 1), int), np.zeros((4, 1), int))  # DP 4 on one node
>>> t = step_time(CATALOG["gpt2-1.3b"], one_node, net)
>>> round(t.t_dp_s, 3), round(t.t_dp_s / t.step_s, 2)
(0.156, 0.13)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from topoopt.parallelconfig.instance import GBPS_TO_BYTES_PER_S
from topoopt.sim.crosscluster.models import Model

if TYPE_CHECKING:
    from topoopt.crosscluster.multicluster import MultiCluster

GRAD_BYTES_PER_PARAM = 2
"""Bytes per parameter in the all-reduce (fp16 / bf16 gradients)."""
ACTIVATION_BYTES = 2
"""Bytes per activation value (fp16)."""
MICRO_BATCHES_PER_GPU = 1
"""``k``: micro-batches (of one sequence) per GPU per step (Fig. 1's batch size 1)."""

FIG1_ALLREDUCE_SHARE = 0.13
"""Share of the all-reduce in a step of GPT-2 1.3B on 4 A100s of one cluster (Fig. 1, left)."""
FIG1_NVLINK_BPS = 200.0 * GBPS_TO_BYTES_PER_S
"""NVLink bandwidth of the testbed's 4-GPU server, 25 GB/s (§5.1)."""
_FIG1_PARAMS, _FIG1_SEQ, _FIG1_GPUS = 1.3e9, 1024, 4
_FIG1_DP_S = (
    2 * (_FIG1_GPUS - 1) / _FIG1_GPUS * GRAD_BYTES_PER_PARAM * _FIG1_PARAMS / FIG1_NVLINK_BPS
)
EFFECTIVE_FLOPS = (
    6 * _FIG1_PARAMS * _FIG1_SEQ / (_FIG1_DP_S * (1 - FIG1_ALLREDUCE_SHARE) / FIG1_ALLREDUCE_SHARE)
)
"""``F``: FLOP/s of one GPU in a step, calibrated on Fig. 1 (module docstring), ~7.65e12."""


@dataclass(frozen=True)
class Network:
    """The bandwidths of a multi-cluster the cost model reads, in Gb/s as in the
    description (converted to bytes/s where used).

    Attributes
    ----------
    clusters
        Cluster names (indices refer to this order).
    intra_gbps, inter_gbps
        Per cluster: between two GPUs of a node, between two nodes.
    beta_gbps
        Widest-path bandwidth between clusters (eq. 1), ``inf`` on the diagonal.
    """

    clusters: tuple[str, ...]
    intra_gbps: np.ndarray
    inter_gbps: np.ndarray
    beta_gbps: np.ndarray

    @classmethod
    def of(cls, mc: MultiCluster) -> Network:
        """The network of a multi-cluster description."""
        graph = mc.graph
        beta = np.array([graph.widest_from(name) for name in graph.clusters], dtype=float)
        np.fill_diagonal(beta, math.inf)
        return cls(
            graph.clusters,
            np.array([c.intra_node_gbps for c in mc.clusters], dtype=float),
            np.array([c.inter_node_gbps for c in mc.clusters], dtype=float),
            beta,
        )

    def group_gbps(self, clusters: np.ndarray, nodes: np.ndarray) -> float:
        """``B_dp``: the bottleneck of a ring over GPUs on ``clusters[i]``, ``nodes[i]``
        (node numbers distinct across clusters; module docstring)."""
        used = np.unique(clusters)
        low = math.inf
        if len(used) > 1:
            low = float(self.beta_gbps[np.ix_(used, used)].min())
        for c in used:
            here = nodes[clusters == c]
            kinds, counts = np.unique(here, return_counts=True)
            if len(kinds) > 1:
                low = min(low, float(self.inter_gbps[c]))
            if counts.max() > 1:
                low = min(low, float(self.intra_gbps[c]))
        return low


@dataclass(frozen=True)
class Layout:
    """Where every GPU of a ``d × p`` job is: ``cluster[j, s]`` and ``node[j, s]`` of replica
    ``j``, stage ``s`` (cluster indices of a :class:`Network`; node numbers distinct across
    the whole description)."""

    cluster: np.ndarray
    node: np.ndarray

    @property
    def d(self) -> int:
        """Replicas."""
        return int(self.cluster.shape[0])

    @property
    def p(self) -> int:
        """Pipeline stages."""
        return int(self.cluster.shape[1])


@dataclass(frozen=True)
class StepTime:
    """One step of a job under a layout (module docstring), seconds."""

    d: int
    p: int
    m: int
    t_comp_s: float
    t_dp_s: float
    t_pp_s: float

    @property
    def step_s(self) -> float:
        """``T_comp + T_dp + T_pp``."""
        return self.t_comp_s + self.t_dp_s + self.t_pp_s


def stage_figures(model: Model, p: int) -> tuple[float, float]:
    """Compute of the slowest stage per micro-batch (s) and its gradient bytes."""
    share = math.ceil(model.layers / p) / model.layers
    compute = share * 6 * model.params * model.seq_len / EFFECTIVE_FLOPS
    return compute, share * GRAD_BYTES_PER_PARAM * model.params


def activation_bytes(model: Model) -> float:
    """``A``: bytes across a stage boundary per micro-batch, forward and backward."""
    return 2.0 * model.seq_len * model.hidden * ACTIVATION_BYTES


def micro_batches(d: int, p: int, per_gpu: int = MICRO_BATCHES_PER_GPU) -> int:
    """``m = ceil(k · G / d)``, micro-batches per replica."""
    return -(-per_gpu * d * p // d)


def compute_time(model: Model, d: int, p: int, per_gpu: int = MICRO_BATCHES_PER_GPU) -> float:
    """``T_comp`` (it does not depend on where the GPUs are: a lower bound of any layout's
    step)."""
    compute, _ = stage_figures(model, p)
    return (micro_batches(d, p, per_gpu) + p - 1) * compute


def step_time(
    model: Model, layout: Layout, net: Network, per_gpu: int = MICRO_BATCHES_PER_GPU
) -> StepTime:
    """The step time of ``model`` under ``layout`` on ``net`` (module docstring)."""
    d, p = layout.d, layout.p
    m = micro_batches(d, p, per_gpu)
    _, grads = stage_figures(model, p)
    t_dp = 0.0
    if d > 1:
        for s in range(p):
            gbps = net.group_gbps(layout.cluster[:, s], layout.node[:, s])
            t_dp = max(t_dp, 2 * (d - 1) / d * grads / (gbps * GBPS_TO_BYTES_PER_S))
    t_pp = 0.0
    if p > 1:
        a, b = layout.cluster[:, :-1], layout.cluster[:, 1:]
        same_node = layout.node[:, :-1] == layout.node[:, 1:]
        gbps = np.where(
            same_node,
            net.intra_gbps[a],
            np.where(a == b, net.inter_gbps[a], net.beta_gbps[a, b]),
        )
        sends = (activation_bytes(model) / (gbps * GBPS_TO_BYTES_PER_S)).sum(axis=1)
        t_pp = m * float(sends.max())
    return StepTime(d, p, m, compute_time(model, d, p, per_gpu), t_dp, t_pp)


def slowdown(step_s: float, reference_s: float) -> float:
    """``T_step / T_ref``, at least 1 (module docstring)."""
    return max(1.0, step_s / reference_s)


__all__ = [
    "ACTIVATION_BYTES",
    "EFFECTIVE_FLOPS",
    "FIG1_ALLREDUCE_SHARE",
    "GRAD_BYTES_PER_PARAM",
    "MICRO_BATCHES_PER_GPU",
    "Layout",
    "Network",
    "StepTime",
    "activation_bytes",
    "compute_time",
    "micro_batches",
    "slowdown",
    "stage_figures",
    "step_time",
]
