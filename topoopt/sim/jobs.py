"""Jobs of a trace and the shape each one takes on a cluster.

A :class:`Job` is what a trace says: an id, a submit time, the GPUs it asks for, its running
time under the reference placement, and optionally its nodes, parallelism (dp, tp, pp),
priority, user and the metadata a learned JCT predictor reads (queue, QoS, CPUs, memory).
:class:`ShapeRule` turns it into a :class:`Shape` on a cluster whose nodes have
``gpus_per_node`` GPUs (``docs/sim.md``, "Jobs"):

* a job of at most ``gpus_per_node`` GPUs runs on one node and shares it with others;
* a larger job takes whole nodes, ``ceil(gpus / gpus_per_node)`` of them (or the trace's node
  count), held exclusively; its parallelism is the trace's when given, else
  ``tp = gpus_per_node``, ``pp`` = the largest divisor of the node count not above
  ``max_pp``, ``dp = nodes / pp`` — the communication matrix of Arnold eq. 1 is then
  ``dp`` rows (PP groups) by ``pp`` columns (DP groups) of nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from topoopt.core.errors import TopooptError


class TraceError(TopooptError, ValueError):
    """A trace breaks a rule: the message names the file, the row, the column and the rule.

    Parameters
    ----------
    where
        ``file:row`` or ``file`` (``row`` counts lines from 1, the header included).
    column
        The offending column (``None`` when the row as a whole is wrong).
    rule
        What is wrong.
    """

    def __init__(self, where: str, column: str | None, rule: str) -> None:
        self.where = where
        self.column = column
        self.rule = rule
        super().__init__(f"{where}: {column}: {rule}" if column else f"{where}: {rule}")


@dataclass(frozen=True)
class Job:
    """One job of a trace.

    Attributes
    ----------
    id
        Unique within the trace.
    submit_s
        Submit time, seconds from the trace's start.
    gpus
        GPUs requested (>= 1).
    duration_s
        Running time under the reference placement (every group inside one minipod); the
        performance model scales it (``docs/sim.md``, "Performance model").
    nodes
        Nodes, when the trace says (else derived, see :class:`ShapeRule`).
    dp, tp, pp
        Parallelism, when the trace says (all three or none).
    priority
        Larger runs first under the priority policies (default 0).
    user
        Owner, when the trace says.
    queue, qos
        Queue (a virtual cluster, a partition) and quality of service, when the trace says.
    cpus, memory_gib
        CPUs and memory (GiB) requested, when the trace says (numbers >= 0).
    origin
        ``file:row`` of the job in its trace, for messages (not part of its identity).
    """

    id: str
    submit_s: float
    gpus: int
    duration_s: float
    nodes: int | None = None
    dp: int | None = None
    tp: int | None = None
    pp: int | None = None
    priority: int = 0
    user: str | None = None
    queue: str | None = None
    qos: str | None = None
    cpus: float | None = None
    memory_gib: float | None = None
    origin: str | None = field(default=None, compare=False)
    """Where the trace gives the job (``file:row``), for messages."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TopooptError(f"job id: must be a non-empty string, got {self.id!r}")
        where = f"job {self.id!r}"
        for name in ("submit_s", "duration_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TopooptError(f"{where}: {name}: must be a number, got {value!r}")
            if not math.isfinite(value) or (name == "duration_s" and value < 0):
                raise TopooptError(f"{where}: {name}: must be finite and >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("cpus", "memory_gib"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TopooptError(f"{where}: {name}: must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise TopooptError(f"{where}: {name}: must be finite and >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("gpus", "nodes", "dp", "tp", "pp"):
            value = getattr(self, name)
            if value is None and name != "gpus":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TopooptError(f"{where}: {name}: must be an integer >= 1, got {value!r}")
        given = [x is not None for x in (self.dp, self.tp, self.pp)]
        if any(given) and not all(given):
            raise TopooptError(f"{where}: dp, tp, pp: give all three or none")
        if self.dp is not None and self.tp is not None and self.pp is not None:
            product = self.dp * self.tp * self.pp
            if product != self.gpus:
                raise TopooptError(
                    f"{where}: dp * tp * pp = {product} must equal gpus = {self.gpus}"
                )
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise TopooptError(f"{where}: priority: must be an integer, got {self.priority!r}")


@dataclass(frozen=True)
class Shape:
    """How a job sits on the cluster.

    ``nodes == 1`` and ``exclusive`` false: ``gpus`` GPUs of one node. Otherwise ``nodes``
    whole nodes, as the ``dp x pp`` communication matrix of Arnold eq. 1 (``dp`` PP groups
    of ``pp`` nodes; ``tp`` GPUs of a node per tensor-parallel group).
    """

    gpus: int
    nodes: int
    exclusive: bool
    dp: int = 1
    tp: int = 1
    pp: int = 1


@dataclass(frozen=True)
class ShapeRule:
    """The documented rule that gives a job its :class:`Shape` (module docstring).

    Attributes
    ----------
    max_pp
        Largest pipeline depth the rule gives a job without parallelism (default 8).
    """

    max_pp: int = 8

    def shape(self, job: Job, gpus_per_node: int) -> Shape:
        """The shape of ``job`` on nodes of ``gpus_per_node`` GPUs.

        Raises
        ------
        TopooptError
            When the trace's nodes or parallelism do not fit nodes of that size.
        """
        if job.gpus <= gpus_per_node and (job.nodes or 1) == 1:
            return Shape(job.gpus, 1, exclusive=False, tp=job.gpus)
        nodes = job.nodes or -(-job.gpus // gpus_per_node)
        if nodes * gpus_per_node < job.gpus:
            raise TopooptError(
                f"job {job.id!r}: {job.gpus} GPUs do not fit {nodes} nodes of {gpus_per_node} GPUs"
            )
        if job.dp is not None:
            tp, pp = job.tp or 1, job.pp or 1
            if gpus_per_node % tp or (job.dp * tp) % gpus_per_node:
                raise TopooptError(
                    f"job {job.id!r}: dp {job.dp} x tp {tp} must fill whole nodes of "
                    f"{gpus_per_node} GPUs (Arnold eq. 1)"
                )
            matrix_nodes = job.dp * tp * pp // gpus_per_node
            if job.nodes is not None and job.nodes != matrix_nodes:
                raise TopooptError(
                    f"job {job.id!r}: nodes {job.nodes} but dp x tp x pp fills {matrix_nodes} "
                    f"nodes of {gpus_per_node} GPUs"
                )
            return Shape(job.gpus, matrix_nodes, exclusive=True, dp=job.dp, tp=tp, pp=pp)
        pp = max(d for d in range(1, min(self.max_pp, nodes) + 1) if nodes % d == 0)
        return Shape(job.gpus, nodes, exclusive=True, dp=nodes // pp, tp=gpus_per_node, pp=pp)
