"""The placement instance: a fat-tree's free nodes per minipod and one LLM job (Arnold §5.1).

The job's **communication matrix** (Arnold eq. 1) has ``rows = dp / (gpus_per_node / tp)``
and ``cols = pp``. Cell ``(r, c)`` is one node hosting ``gpus_per_node / tp`` DP ranks of
pipeline stage ``c``; a row is a node-level PP group (one pipeline), a column a node-level
DP group (one stage).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import FORMAT_VERSION, Instance

DEFAULT_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Leaf:
    """A leaf (rack) switch inside a minipod and the names of its free nodes."""

    name: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Minipod:
    """A spine-level pod of the fat-tree.

    Attributes
    ----------
    name
        Minipod name.
    free_nodes
        Number of free nodes.
    leaves
        Optional leaf switches with named free nodes; when given, ``free_nodes`` equals their
        total and rank assignment uses the names.
    """

    name: str
    free_nodes: int
    leaves: tuple[Leaf, ...] = ()

    def node_names(self) -> list[str]:
        """Names of the free nodes in leaf order (``"<minipod>/n<i>"`` when none are given)."""
        if self.leaves:
            return [node for leaf in self.leaves for node in leaf.nodes]
        return [f"{self.name}/n{i}" for i in range(self.free_nodes)]


@dataclass(frozen=True)
class PlacementInstance(Instance):
    """Place one LLM job's nodes into minipods (family ``placement``).

    Attributes
    ----------
    name
        Instance name.
    minipods
        The minipods with their free nodes.
    dp, tp, pp
        Data-, tensor- and pipeline-parallel degrees of the job.
    alpha
        Weight of the DP spread in the score; ``beta = 1 - alpha`` weighs the PP spread.
    gpus_per_node
        GPUs per node (``tp`` must divide it).

    Examples
    --------
    >>> inst = PlacementInstance.from_dict({
    ...     "family": "placement", "name": "fig12",
    ...     "topology": {"gpus_per_node": 8, "minipods": [{"name": "a", "free_nodes": 6},
    ...                                                   {"name": "b", "free_nodes": 6}]},
    ...     "job": {"dp": 6, "tp": 8, "pp": 2}, "alpha": 0.5})
    >>> inst.rows, inst.cols, inst.n_nodes, inst.capacities
    (6, 2, 12, (6, 6))
    """

    family: ClassVar[str] = "placement"

    name: str
    minipods: tuple[Minipod, ...]
    dp: int
    tp: int
    pp: int
    alpha: float
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE

    def __post_init__(self) -> None:
        v.as_str(self.name, "name")
        g = v.as_int(self.gpus_per_node, "topology.gpus_per_node", minimum=1)
        dp = v.as_int(self.dp, "job.dp", minimum=1)
        tp = v.as_int(self.tp, "job.tp", minimum=1)
        v.as_int(self.pp, "job.pp", minimum=1)
        v.as_float(self.alpha, "alpha", minimum=0.0, maximum=1.0)
        if g % tp:
            raise InvalidInstanceError(
                "job.tp",
                f"must divide topology.gpus_per_node={g} (TP stays inside a node), got {tp}",
            )
        ranks_per_node = g // tp
        if dp % ranks_per_node:
            raise InvalidInstanceError(
                "job.dp",
                f"must be a multiple of gpus_per_node/tp = {ranks_per_node} so that the "
                f"communication matrix has an integral number of rows, got {dp}",
            )
        if not self.minipods:
            raise InvalidInstanceError("topology.minipods", "must list at least one minipod")
        v.unique_names([m.name for m in self.minipods], "topology.minipods")
        seen_nodes: dict[str, int] = {}
        for i, pod in enumerate(self.minipods):
            v.as_int(pod.free_nodes, f"topology.minipods[{i}].free_nodes", minimum=0)
            for node in pod.node_names() if pod.leaves else ():
                if node in seen_nodes:
                    raise InvalidInstanceError(
                        f"topology.minipods[{i}].leaves",
                        f"node {node!r} is also listed in topology.minipods[{seen_nodes[node]}]",
                    )
                seen_nodes[node] = i
        if self.n_nodes > self.total_free:
            raise InvalidInstanceError(
                "topology.minipods",
                f"the job needs {self.n_nodes} nodes but only {self.total_free} are free",
            )

    @property
    def beta(self) -> float:
        """Weight of the PP spread, ``1 - alpha``."""
        return 1.0 - self.alpha

    @property
    def rows(self) -> int:
        """Rows of the communication matrix (node-level PP groups), Arnold eq. 1."""
        return self.dp // (self.gpus_per_node // self.tp)

    @property
    def cols(self) -> int:
        """Columns of the communication matrix (node-level DP groups) = ``pp``."""
        return self.pp

    @property
    def n_nodes(self) -> int:
        """Nodes the job needs, ``rows * cols``."""
        return self.rows * self.cols

    @property
    def n_minipods(self) -> int:
        return len(self.minipods)

    @property
    def capacities(self) -> tuple[int, ...]:
        """Free nodes of each minipod, in order."""
        return tuple(m.free_nodes for m in self.minipods)

    @property
    def total_free(self) -> int:
        return sum(self.capacities)

    def to_dict(self) -> dict[str, Any]:
        pods = []
        for pod in self.minipods:
            entry: dict[str, Any] = {"name": pod.name, "free_nodes": pod.free_nodes}
            if pod.leaves:
                entry["leaves"] = [{"name": lf.name, "nodes": list(lf.nodes)} for lf in pod.leaves]
            pods.append(entry)
        return {
            "family": self.family,
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "topology": {"gpus_per_node": self.gpus_per_node, "minipods": pods},
            "job": {"dp": self.dp, "tp": self.tp, "pp": self.pp},
            "alpha": self.alpha,
        }

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, base_dir: Path | None = None
    ) -> PlacementInstance:
        """Read the JSON object of the family (see ``docs/placement.md`` for the schema).

        ``topology.minipods`` may list objects (``name``, ``free_nodes``, optional ``leaves``)
        or plain free-node counts (then named ``mp0``, ``mp1``, ...).
        """
        topology = v.as_mapping(v.field(data, "topology"), "topology")
        job = v.as_mapping(v.field(data, "job"), "job")
        raw_pods = v.as_list(
            v.field(topology, "minipods", "topology"), "topology.minipods", min_len=1
        )
        return cls(
            name=v.as_str(data.get("name", "unnamed"), "name"),
            minipods=tuple(_read_minipod(p, i) for i, p in enumerate(raw_pods)),
            dp=v.as_int(v.field(job, "dp", "job"), "job.dp", minimum=1),
            tp=v.as_int(v.field(job, "tp", "job"), "job.tp", minimum=1),
            pp=v.as_int(v.field(job, "pp", "job"), "job.pp", minimum=1),
            alpha=v.as_float(v.field(data, "alpha"), "alpha", minimum=0.0, maximum=1.0),
            gpus_per_node=v.as_int(
                topology.get("gpus_per_node", DEFAULT_GPUS_PER_NODE),
                "topology.gpus_per_node",
                minimum=1,
            ),
        )


def _read_minipod(raw: Any, index: int) -> Minipod:
    path = f"topology.minipods[{index}]"
    if not isinstance(raw, Mapping):
        return Minipod(name=f"mp{index}", free_nodes=v.as_int(raw, path, minimum=0))
    name = v.as_str(raw.get("name", f"mp{index}"), f"{path}.name")
    leaves = tuple(
        _read_leaf(leaf, f"{path}.leaves[{k}]")
        for k, leaf in enumerate(v.as_list(raw.get("leaves", []), f"{path}.leaves"))
    )
    from_leaves = sum(len(leaf.nodes) for leaf in leaves)
    if "free_nodes" in raw:
        free = v.as_int(raw["free_nodes"], f"{path}.free_nodes", minimum=0)
        if leaves and free != from_leaves:
            raise InvalidInstanceError(
                f"{path}.free_nodes",
                f"is {free} but its leaves list {from_leaves} free nodes",
            )
    elif leaves:
        free = from_leaves
    else:
        raise InvalidInstanceError(f"{path}.free_nodes", "missing required field")
    return Minipod(name=name, free_nodes=free, leaves=leaves)


def _read_leaf(raw: Any, path: str) -> Leaf:
    raw = v.as_mapping(raw, path)
    nodes = v.as_list(v.field(raw, "nodes", path), f"{path}.nodes")
    names = tuple(v.as_str(n, f"{path}.nodes[{i}]") for i, n in enumerate(nodes))
    v.unique_names(names, f"{path}.nodes")
    return Leaf(name=v.as_str(raw.get("name", "leaf"), f"{path}.name"), nodes=names)
