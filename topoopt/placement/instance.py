"""The placement instance: a fat-tree's free nodes per minipod and one LLM job (Arnold §5.1).

The job's **communication matrix** (Arnold eq. 1) has ``rows = dp / (gpus_per_node / tp)``
and ``cols = pp``. Cell ``(r, c)`` is one node hosting ``gpus_per_node / tp`` DP ranks of
pipeline stage ``c``; a row is a node-level PP group (one pipeline), a column a node-level
DP group (one stage).

Every rule lives in a constructor (:class:`Leaf`, :class:`Minipod`, :class:`PlacementInstance`),
so an instance built in code is checked exactly like one read from JSON:
:meth:`PlacementInstance.from_dict` only takes the JSON object apart and calls the constructor.
The constructors normalise their fields: integral floats and NumPy scalars become Python
``int`` / ``float``, booleans are refused where a number is required, sequences become tuples,
and minipods and leaves may be given as objects, tuples or JSON-like mappings. A broken rule
raises :class:`~topoopt.core.errors.InvalidInstanceError` naming the JSON path of the field
(``job.dp``, ``topology.minipods[2].free_nodes``, ...).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import Instance
from topoopt.core.safejson import FileAccess
from topoopt.placement.schema import LIMITS

if TYPE_CHECKING:  # the result type parameter of the Instance base class
    from topoopt.placement.result import PlacementResult  # noqa: F401
    from topoopt.topology import Topology

DEFAULT_GPUS_PER_NODE = 8

limits.declare_all(LIMITS)


def _is_pair(value: Any, sizes: tuple[int, ...]) -> bool:
    """Whether ``value`` is a tuple-like sequence (not a string) of one of the ``sizes``."""
    return (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) in sizes
    )


def _is_count(value: Any) -> bool:
    """Whether ``value`` is meant as a number (then checked as one), not a structure."""
    return value is None or isinstance(value, numbers.Number)


# --- the instance --------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Leaf:
    """A leaf (rack) switch inside a minipod and the names of its free nodes.

    Parameters
    ----------
    name
        Leaf name (a non-empty string).
    nodes
        Names of its free nodes: any ordered collection of distinct non-empty strings, stored
        as a tuple.
    path
        Names of the switches between the minipod and the leaf, top first (default empty: the
        leaf hangs right below its minipod); stored as a tuple. Inside an instance every leaf's
        path has the same length, one name per intermediate level
        (:func:`~topoopt.placement.cluster.from_topology` fills it when the leaves are more
        than one level below the minipods); the results report the DP/PP spreads at each of
        these levels (``level1_dp_spread``, ...).

    Raises
    ------
    InvalidInstanceError
        With a field path relative to the leaf (``name``, ``nodes[2]``, ``path[0]``); inside
        an instance the path is prefixed (``topology.minipods[0].leaves[1].nodes[2]``).

    Examples
    --------
    >>> Leaf("leaf0", ["h1", "h2"])
    Leaf(name='leaf0', nodes=('h1', 'h2'))
    >>> Leaf("rack3", ["h5"], path=["group1"])
    Leaf(name='rack3', nodes=('h5',), path=('group1',))
    """

    name: str
    nodes: tuple[str, ...]
    path: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", v.as_str(self.name, "name"))
        nodes = v.as_tuple(self.nodes, "nodes")
        names = tuple(v.as_str(node, f"nodes[{i}]") for i, node in enumerate(nodes))
        v.unique_names(names, "nodes")
        object.__setattr__(self, "nodes", names)
        path = v.as_tuple(self.path, "path")
        object.__setattr__(
            self, "path", tuple(v.as_str(name, f"path[{i}]") for i, name in enumerate(path))
        )

    def __repr__(self) -> str:
        path = f", path={self.path!r}" if self.path else ""
        return f"Leaf(name={self.name!r}, nodes={self.nodes!r}{path})"


def _as_leaf(item: Any, index: int) -> Leaf:
    """A :class:`Leaf` from a ``Leaf``, a ``(name, nodes)`` pair, a ``(name, nodes, path)``
    triple or a JSON-like mapping."""
    with v.within(f"leaves[{index}]"):
        if isinstance(item, Leaf):
            return item
        if isinstance(item, Mapping):
            return Leaf(
                name=item.get("name", "leaf"),
                nodes=v.field(item, "nodes"),
                path=item.get("path", ()),
            )
        if _is_pair(item, (2, 3)):
            return Leaf(*item)
        raise InvalidInstanceError(
            "",
            "must be a Leaf, a (name, nodes) pair, a (name, nodes, path) triple or a JSON "
            f"object, got {item!r}",
        )


def _as_leaves(value: Any) -> tuple[Leaf, ...]:
    return tuple(_as_leaf(item, k) for k, item in enumerate(v.as_tuple(value, "leaves")))


@dataclass(frozen=True)
class Minipod:
    """A spine-level pod of the fat-tree.

    Parameters
    ----------
    name
        Minipod name (a non-empty string).
    free_nodes
        Number of free nodes: a non-negative integer (an integral float or a NumPy integer is
        stored as ``int``).
    leaves
        Optional leaf switches with named free nodes, each a :class:`Leaf`, a
        ``(name, nodes)`` pair or a mapping ``{"name": ..., "nodes": [...]}``; stored as a
        tuple of :class:`Leaf`. When given, ``free_nodes`` must equal their total (see
        :meth:`from_leaves`), node names must be distinct, and rank assignment uses the names.

    Raises
    ------
    InvalidInstanceError
        With a field path relative to the minipod (``free_nodes``, ``leaves[1].nodes[0]``);
        inside an instance the path is prefixed (``topology.minipods[2].free_nodes``).

    Examples
    --------
    >>> Minipod("a", 40.0)
    Minipod(name='a', free_nodes=40, leaves=())
    >>> Minipod.from_leaves("b", [("leaf0", ["h1", "h2"]), ("leaf1", ["h3"])]).free_nodes
    3
    """

    name: str
    free_nodes: int
    leaves: tuple[Leaf, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", v.as_str(self.name, "name"))
        free = v.as_int(self.free_nodes, "free_nodes", minimum=0)
        object.__setattr__(self, "free_nodes", free)
        leaves = _as_leaves(self.leaves)
        object.__setattr__(self, "leaves", leaves)
        if not leaves:
            return
        listed = sum(len(leaf.nodes) for leaf in leaves)
        if free != listed:
            raise InvalidInstanceError(
                "free_nodes", f"is {free} but its leaves list {listed} free nodes"
            )
        seen: dict[str, int] = {}
        for k, leaf in enumerate(leaves):
            for m, node in enumerate(leaf.nodes):
                if node in seen:
                    raise InvalidInstanceError(
                        f"leaves[{k}].nodes[{m}]",
                        f"node {node!r} is also listed in leaves[{seen[node]}]",
                    )
                seen[node] = k

    @classmethod
    def from_leaves(cls, name: str, leaves: Any) -> Minipod:
        """A minipod whose free nodes are exactly those its ``leaves`` list."""
        parsed = _as_leaves(leaves)
        return cls(name, sum(len(leaf.nodes) for leaf in parsed), parsed)

    def node_names(self) -> list[str]:
        """Names of the free nodes in leaf order (``"<minipod>/n<i>"`` when none are given)."""
        if self.leaves:
            return [node for leaf in self.leaves for node in leaf.nodes]
        return [f"{self.name}/n{i}" for i in range(self.free_nodes)]


def _as_minipod(item: Any, index: int) -> Minipod:
    """A :class:`Minipod` from any accepted form (see :class:`PlacementInstance`)."""
    path = f"topology.minipods[{index}]"
    if isinstance(item, Minipod):
        return item
    if _is_count(item):  # a plain free-node count (JSON form)
        try:
            return Minipod(f"mp{index}", item)
        except InvalidInstanceError as exc:
            raise InvalidInstanceError(path, exc.rule) from None
    with v.within(path):
        if isinstance(item, Mapping):
            name = item.get("name", f"mp{index}")
            if "free_nodes" in item:
                return Minipod(name, item["free_nodes"], item.get("leaves", ()))
            if "leaves" in item:
                return Minipod.from_leaves(name, item["leaves"])
            raise InvalidInstanceError("free_nodes", "missing required field")
        if _is_pair(item, (2, 3)):
            return Minipod(*item)
    raise InvalidInstanceError(
        path,
        "must be a Minipod, a (name, free_nodes) pair, a JSON object or a free-node count, "
        f"got {item!r}",
    )


def _check_paths(pods: tuple[Minipod, ...]) -> None:
    """Every leaf's path has the length of the first leaf's (one name per level)."""
    first: tuple[str, int] | None = None
    for i, pod in enumerate(pods):
        for k, leaf in enumerate(pod.leaves):
            where = f"topology.minipods[{i}].leaves[{k}].path"
            if first is None:
                first = (where, len(leaf.path))
            elif len(leaf.path) != first[1]:
                raise InvalidInstanceError(
                    where,
                    f"names {len(leaf.path)} switches but {first[0]} names {first[1]}; every "
                    "leaf's path names one switch per level between the minipod and the leaf",
                )


OBJECTIVE_MODES = ("top", "lex", "weighted")
"""How the scores of the levels combine (:class:`LevelObjective`)."""


@dataclass(frozen=True)
class LevelObjective:
    """How the scores of the levels of the tree combine into the objective.

    Level ``l`` (0 = the minipods, then the switches of the leaves' paths, the leaves last)
    has the score ``S_l = alpha * D(DP spread at l) + beta * D(PP spread at l)``, Arnold
    eq. 2 over the switches of that level (``docs/levels.md``).

    Parameters
    ----------
    mode
        ``"top"`` (default): Arnold's objective, ``S_0`` alone (the levels below are
        reported, not optimised). ``"lex"``: lexicographic from the top, ``S_0`` first, then
        ``S_1`` among the placements with the least ``S_0``, and so on; the objective value
        is ``S_0`` (the leading term) and the metrics carry every level's score.
        ``"weighted"``: ``sum_l weights[l] * S_l``.
    weights
        For ``"weighted"``: one non-negative weight per level, top first, at least one
        positive (the instance checks that there is one per level); empty otherwise.

    Raises
    ------
    InvalidInstanceError
        Naming ``levels`` or ``weights[i]`` (inside an instance ``objective.levels``, ...).

    Examples
    --------
    >>> LevelObjective("weighted", [4, 2, 1.0])
    LevelObjective(mode='weighted', weights=(4.0, 2.0, 1.0))
    >>> LevelObjective("lex").to_dict()
    {'levels': 'lex'}
    """

    mode: str = "top"
    weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in OBJECTIVE_MODES:
            raise InvalidInstanceError(
                "levels", f"must be one of {', '.join(OBJECTIVE_MODES)}, got {self.mode!r}"
            )
        weights = v.as_tuple(self.weights, "weights")
        parsed = tuple(v.as_float(w, f"weights[{i}]", minimum=0.0) for i, w in enumerate(weights))
        if self.mode == "weighted":
            if not parsed:
                raise InvalidInstanceError("weights", "must list one weight per level")
            if not any(parsed):
                raise InvalidInstanceError("weights", "must have at least one positive weight")
        elif parsed:
            raise InvalidInstanceError(
                "weights", f"are only for levels 'weighted', not {self.mode!r}"
            )
        object.__setattr__(self, "weights", parsed)

    @property
    def multilevel(self) -> bool:
        """Whether the objective looks below the minipods (``lex`` or ``weighted``)."""
        return self.mode != "top"

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (``{"levels": "lex"}``, ``{"levels": "weighted", "weights": [...]}``)."""
        out: dict[str, Any] = {"levels": self.mode}
        if self.weights:
            out["weights"] = list(self.weights)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> LevelObjective:
        """Read the JSON object (``levels`` defaults to ``"top"``)."""
        data = v.as_mapping(data, "")
        return cls(data.get("levels", "top"), data.get("weights", ()))


def as_objective(value: Any) -> LevelObjective:
    """A :class:`LevelObjective` from itself, ``None`` (``top``), a mode name or a JSON-like
    mapping; errors name ``objective.<field>``.

    Examples
    --------
    >>> as_objective({"levels": "weighted", "weights": [2, 1]}).weights
    (2.0, 1.0)
    """
    with v.within("objective"):
        if isinstance(value, LevelObjective):
            return value
        if value is None:
            return LevelObjective()
        if isinstance(value, str):
            return LevelObjective(value)
        if isinstance(value, Mapping):
            return LevelObjective.from_dict(value)
        raise InvalidInstanceError(
            "", f"must be a LevelObjective, a mode name or a JSON object, got {value!r}"
        )


CONSTRAINT_FIELDS = (
    "required_level",
    "preferred_level",
    "slice_size",
    "slice_level",
    "slice_layers",
    "segment",
    "max_switches",
    "block",
)
"""The fields of :class:`Constraints`, in JSON order."""


@dataclass(frozen=True)
class Constraints:
    """What a user of a production scheduler may require of a placement (``docs/levels.md``).

    Ranks are the launcher's node ranks (rank ``k = c * rows + r`` runs on cell ``(r, c)``,
    :func:`~topoopt.placement.solution.node_rank`); a *slice* is a run of consecutive ranks.
    Levels are given by name or index (:meth:`PlacementInstance.level`); the instance stores
    the level's name.

    Parameters
    ----------
    required_level
        Kueue ``kueue.x-k8s.io/podset-required-topology``: the whole job inside one switch
        of this level.
    preferred_level
        Kueue ``podset-preferred-topology``: inside one switch of this level if some switch
        can hold it, else of the level above, and so on (Kueue's fall-back); anywhere when
        not even a minipod can. Not a rule of :func:`~topoopt.placement.solution.check`.
    slice_size, slice_level
        Kueue ``podset-slice-size`` and ``podset-slice-required-topology``: the ranks in
        slices of ``slice_size`` consecutive ranks, each slice inside one switch of
        ``slice_level`` (default: the leaves, Kueue's lowest level); ``slice_size`` divides
        the job.
    slice_layers
        Kueue ``podset-slice-required-topology-constraints`` (multi-layer slices, feature
        gate ``TASMultiLayerTopology``): ``(size, level)`` layers, coarsest first, each a
        slice rule as above that holds together with the others — slices of ``size``
        consecutive ranks, each inside one switch of ``level``. Each layer's level is
        below the one before and its size divides the one before (Kueue's rules), the
        first size divides the job. JSON: ``[{"size": 64, "level": "block"}, ...]``. Not
        with ``slice_size`` / ``slice_level`` (Kueue: mutually exclusive).
    segment
        Slurm ``--segment``: slices of ``segment`` consecutive ranks, each inside one leaf
        (a base block); when the job has more nodes than a segment the segment must divide
        them, and a job within one segment is not constrained (Slurm: "no effect").
    max_switches
        Slurm ``--switches=count``: at most this many leaves (leaf switches) in all.
    block
        Slurm topology/block (``True``): the job inside one block of the smallest size of
        the instance's ``block_sizes`` that holds it (anywhere when none does), and each
        segment inside one block of the smallest size that holds a segment (a segment
        larger than every block is refused). Needs ``topology.block_sizes``.

    Examples
    --------
    >>> Constraints(slice_size=4, slice_level="rack").to_dict()
    {'slice_size': 4, 'slice_level': 'rack'}
    >>> bool(Constraints()), bool(Constraints(max_switches=2))
    (False, True)
    >>> Constraints(slice_layers=[{"size": 8, "level": "group"}, (4, "rack")]).to_dict()
    {'slice_layers': [{'size': 8, 'level': 'group'}, {'size': 4, 'level': 'rack'}]}
    """

    required_level: str | int | None = None
    preferred_level: str | int | None = None
    slice_size: int | None = None
    slice_level: str | int | None = None
    slice_layers: tuple[tuple[int, str | int], ...] | None = None
    segment: int | None = None
    max_switches: int | None = None
    block: bool | None = None

    def __post_init__(self) -> None:
        if self.block is not None and not isinstance(self.block, bool):
            raise InvalidInstanceError("block", f"must be true or false, got {self.block!r}")
        if self.block is False:
            object.__setattr__(self, "block", None)
        for name in ("slice_size", "segment", "max_switches"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, v.as_int(value, name, minimum=1))
        for name in ("required_level", "preferred_level", "slice_level"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
                raise InvalidInstanceError(name, f"must be a level name or index, got {value!r}")
            if isinstance(value, str) and not value:
                raise InvalidInstanceError(name, "must be a non-empty level name")
        if self.required_level is not None and self.preferred_level is not None:
            raise InvalidInstanceError(
                "preferred_level", "give required_level or preferred_level, not both (Kueue)"
            )
        if self.slice_level is not None and self.slice_size is None:
            raise InvalidInstanceError("slice_level", "needs slice_size (Kueue)")
        if self.slice_layers is not None:
            object.__setattr__(self, "slice_layers", _layers(self.slice_layers))
            if self.slice_size is not None:
                raise InvalidInstanceError(
                    "slice_layers",
                    "give slice_layers or slice_size / slice_level, not both (Kueue: "
                    "podset-slice-required-topology-constraints excludes podset-slice-size)",
                )

    def __bool__(self) -> bool:
        return any(getattr(self, name) is not None for name in CONSTRAINT_FIELDS)

    @property
    def rank_bound(self) -> bool:
        """Whether a rule names ranks (slices, segments): then rows and columns of the
        communication matrix are no longer interchangeable."""
        return any(x is not None for x in (self.slice_size, self.slice_layers, self.segment))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (the fields given)."""
        out = {
            name: getattr(self, name)
            for name in CONSTRAINT_FIELDS
            if getattr(self, name) is not None
        }
        if self.slice_layers is not None:
            out["slice_layers"] = [{"size": n, "level": at} for n, at in self.slice_layers]
        return out


def _layers(value: Any) -> tuple[tuple[int, str | int], ...]:
    """``slice_layers`` as ``(size, level)`` pairs, from pairs or ``{"size", "level"}``
    objects; errors name ``slice_layers[i].<field>``."""
    out = []
    for i, layer in enumerate(v.as_list(value, "slice_layers", min_len=1)):
        path = f"slice_layers[{i}]"
        if isinstance(layer, Mapping):
            unknown = sorted(set(layer) - {"size", "level"})
            if unknown:
                raise InvalidInstanceError(f"{path}.{unknown[0]}", "unknown; known: size, level")
            size, level = v.field(layer, "size", path), v.field(layer, "level", path)
        elif isinstance(layer, (tuple, list)) and len(layer) == 2:
            size, level = layer
        else:
            raise InvalidInstanceError(path, f"must be {{'size': S, 'level': L}}, got {layer!r}")
        size = v.as_int(size, f"{path}.size", minimum=1)
        if isinstance(level, bool) or not isinstance(level, (str, int)) or level == "":
            raise InvalidInstanceError(
                f"{path}.level", f"must be a level name or index, got {level!r}"
            )
        out.append((size, level))
    return tuple(out)


def as_constraints(value: Any) -> Constraints:
    """:class:`Constraints` from itself, ``None`` or a JSON-like mapping; errors name
    ``constraints.<field>``."""
    with v.within("constraints"):
        if isinstance(value, Constraints):
            return value
        if value is None:
            return Constraints()
        data = v.as_mapping(value, "")
        unknown = sorted(set(data) - set(CONSTRAINT_FIELDS))
        if unknown:
            raise InvalidInstanceError(
                unknown[0], f"unknown constraint; known: {', '.join(CONSTRAINT_FIELDS)}"
            )
        return Constraints(**{k: data[k] for k in CONSTRAINT_FIELDS if k in data})


def _check_tree(pods: tuple[Minipod, ...]) -> None:
    """Inside a minipod, a switch of a leaf's path has one parent: the same name at level
    ``i`` always follows the same switches above it (else it would hang under two)."""
    for i, pod in enumerate(pods):
        above: dict[tuple[int, str], tuple[tuple[str, ...], int]] = {}
        for k, leaf in enumerate(pod.leaves):
            for depth, name in enumerate(leaf.path):
                prefix = leaf.path[:depth]
                seen = above.setdefault((depth, name), (prefix, k))
                if seen[0] != prefix:
                    first = "/".join((pod.name, *seen[0]))
                    here = "/".join((pod.name, *prefix))
                    raise InvalidInstanceError(
                        f"topology.minipods[{i}].leaves[{k}].path[{depth}]",
                        f"switch {name!r} is under {here!r} here but under {first!r} in "
                        f"leaves[{seen[1]}]: a switch has one parent",
                    )


def default_level_names(levels: int) -> tuple[str, ...]:
    """Names of the levels when the instance gives none: ``minipod``, ``level1``, ...,
    ``leaf`` (one name, ``minipod``, for an instance without leaves).

    Examples
    --------
    >>> default_level_names(4)
    ('minipod', 'level1', 'level2', 'leaf')
    """
    if levels <= 1:
        return ("minipod",)
    return ("minipod", *(f"level{i}" for i in range(1, levels - 1)), "leaf")


@dataclass(frozen=True)
class PlacementInstance(Instance["PlacementResult"]):
    """Place one LLM job's nodes into minipods (family ``placement``).

    Parameters
    ----------
    name
        Instance name (a non-empty string).
    minipods
        The minipods with their free nodes (at least one, distinct names), stored as a tuple of
        :class:`Minipod`. Each item may be a :class:`Minipod`, a ``(name, free_nodes)`` or
        ``(name, free_nodes, leaves)`` tuple, a mapping like the JSON objects
        (``{"name": "a", "free_nodes": 6}``) or a plain free-node count (named ``mp<i>``).
    dp, tp, pp
        Data-, tensor- and pipeline-parallel degrees of the job (integers >= 1; ``tp`` divides
        ``gpus_per_node`` and ``dp`` is a multiple of ``gpus_per_node / tp``, Arnold eq. 1).
    alpha
        Weight of the DP spread in the score (Arnold eq. 2), in [0, 1]; ``beta = 1 - alpha``
        weighs the PP spread. Stored as ``float``.
    gpus_per_node
        GPUs per node (default 8).
    labels
        Free-form metadata, string to string (e.g. ``{"setting": "iii"}``); part of equality
        but not of the hash, written to JSON only when non-empty.
    level_names
        Optional names of the levels, top first: the minipods, each level of the leaves'
        paths, the leaves (:attr:`levels` names; e.g. ``("block", "rack", "host")`` from a
        Kueue ``Topology``). Default: :func:`default_level_names`.
    objective
        How the levels' scores combine (:class:`LevelObjective`; default ``"top"``, Arnold's
        objective at the minipods). A mode name (``"lex"``) or a JSON-like mapping is
        accepted.
    constraints
        What the placement must respect (:class:`Constraints`, or its JSON object): a
        required or preferred level, slices, Slurm segments and switch counts. Levels are
        stored by name; a slice size or segment that does not divide the job is refused.
    block_sizes
        Slurm topology/block's ``BlockSizes`` for an instance whose leaves are base blocks:
        one size per level, the leaves' (base) first, each a power-of-two multiple of the
        one before (JSON ``topology.block_sizes``). Used by the ``block`` constraint and
        ``placement/slurm-block``.

    Notes
    -----
    Integers may be given as integral floats (``6.0``) or NumPy integers and are stored as
    ``int``; booleans are refused. A node named in the leaves of two minipods is refused, and
    the minipods must have at least ``n_nodes`` free nodes in total.

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path of the field (``job.dp``, ``alpha``,
        ``topology.minipods[2].free_nodes``, ``labels.setting``, ...) and the rule.

    Examples
    --------
    >>> inst = PlacementInstance(
    ...     "fig12", [Minipod("a", 6), ("b", 6.0)], dp=6, tp=8, pp=2, alpha=0.5,
    ...     labels={"figure": "12"})
    >>> inst.rows, inst.cols, inst.n_nodes, inst.capacities
    (6, 2, 12, (6, 6))
    >>> inst == PlacementInstance.from_dict(inst.to_dict())
    True
    """

    family: ClassVar[str] = "placement"

    name: str
    minipods: tuple[Minipod, ...]
    dp: int
    tp: int
    pp: int
    alpha: float
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    labels: dict[str, str] = field(default_factory=dict, hash=False)
    level_names: tuple[str, ...] = ()
    objective: LevelObjective = field(default_factory=LevelObjective)
    constraints: Constraints = field(default_factory=Constraints)
    block_sizes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(self.name, "name"))
        g = v.as_int(self.gpus_per_node, "topology.gpus_per_node", minimum=1)
        dp = v.as_int(self.dp, "job.dp", minimum=1)
        tp = v.as_int(self.tp, "job.tp", minimum=1)
        pp = v.as_int(self.pp, "job.pp", minimum=1)
        alpha = v.as_float(self.alpha, "alpha", minimum=0.0, maximum=1.0)
        for attr, value in (("gpus_per_node", g), ("dp", dp), ("tp", tp), ("pp", pp)):
            put(self, attr, value)
        put(self, "alpha", alpha)
        put(self, "labels", v.as_labels(self.labels, "labels"))
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
        raw_pods = v.as_tuple(self.minipods, "topology.minipods", min_len=1)
        limits.check(
            "placement_minipods", len(raw_pods), "topology.minipods", f"{len(raw_pods)} minipods"
        )
        pods = tuple(_as_minipod(item, i) for i, item in enumerate(raw_pods))
        put(self, "minipods", pods)
        v.unique_names([m.name for m in pods], "topology.minipods")
        free = sum(pod.free_nodes for pod in pods)
        limits.check("placement_free_nodes", free, "topology.minipods", f"{free} free nodes")
        seen_nodes: dict[str, int] = {}
        for i, pod in enumerate(pods):
            for node in pod.node_names() if pod.leaves else ():
                if node in seen_nodes:
                    raise InvalidInstanceError(
                        f"topology.minipods[{i}].leaves",
                        f"node {node!r} is also listed in topology.minipods[{seen_nodes[node]}]",
                    )
                seen_nodes[node] = i
        _check_paths(pods)
        _check_tree(pods)
        levels = self.n_levels
        names = v.as_tuple(self.level_names, "topology.level_names")
        names = tuple(v.as_str(n, f"topology.level_names[{i}]") for i, n in enumerate(names))
        if names and len(names) != levels:
            raise InvalidInstanceError(
                "topology.level_names",
                f"names {len(names)} levels but the instance has {levels} (the minipods, "
                f"{self.path_depth} level(s) of leaf paths, the leaves)"
                if levels > 1
                else f"names {len(names)} levels but the instance has 1 (no leaves)",
            )
        v.unique_names(names, "topology.level_names")
        put(self, "level_names", names)
        objective = as_objective(self.objective)
        if objective.weights and len(objective.weights) != levels:
            raise InvalidInstanceError(
                "objective.weights",
                f"gives {len(objective.weights)} weights for {levels} level(s), one per level "
                "top first",
            )
        put(self, "objective", objective)
        put(self, "block_sizes", self._check_block_sizes())
        put(self, "constraints", self._resolve_constraints(as_constraints(self.constraints)))
        if self.n_nodes > self.total_free:
            raise InvalidInstanceError(
                "topology.minipods",
                f"the job needs {self.n_nodes} nodes but only {self.total_free} are free",
            )

    @property
    def path_depth(self) -> int:
        """Levels between the minipods and the leaves: the length of every leaf's
        :attr:`Leaf.path` (0 without leaves or paths)."""
        return next((len(leaf.path) for pod in self.minipods for leaf in pod.leaves), 0)

    def _check_block_sizes(self) -> tuple[int, ...]:
        """Slurm's ``BlockSizes``: one per level (the leaves are the base blocks, each level
        above a power-of-two multiple of the one below)."""
        sizes = v.as_tuple(self.block_sizes, "topology.block_sizes")
        out = tuple(
            v.as_int(s, f"topology.block_sizes[{i}]", minimum=1) for i, s in enumerate(sizes)
        )
        if not out:
            return out
        if len(out) != self.n_levels:
            raise InvalidInstanceError(
                "topology.block_sizes",
                f"gives {len(out)} sizes for {self.n_levels} level(s): one per level, the base "
                "block (the leaves) first",
            )
        for i in range(1, len(out)):
            ratio, rest = divmod(out[i], out[i - 1])
            if rest or ratio < 2 or ratio & (ratio - 1):
                raise InvalidInstanceError(
                    f"topology.block_sizes[{i}]",
                    f"must be a power-of-two multiple (2, 4, ...) of {out[i - 1]} (Slurm "
                    f"BlockSizes), got {out[i]}",
                )
        return out

    def block_level(self, size: int) -> int | None:
        """The level of the smallest block of ``block_sizes`` that holds ``size`` nodes
        (``None`` without block sizes or when none does; Slurm's ``_get_block_level``)."""
        for i, s in enumerate(self.block_sizes):
            if s >= size:
                return self.n_levels - 1 - i
        return None

    def _resolve_constraints(self, given: Constraints) -> Constraints:
        """The constraints with their levels as names, checked against the job and levels."""
        if not given:
            return given
        names = self.levels
        resolved: dict[str, Any] = given.to_dict()
        for name in ("required_level", "preferred_level", "slice_level"):
            value = getattr(given, name)
            if value is not None:
                resolved[name] = names[self.level(value, f"constraints.{name}")]
        n = self.n_nodes
        if given.slice_size is not None:
            resolved.setdefault("slice_level", names[-1])
            self._check_slice(
                given.slice_size,
                resolved["slice_level"],
                resolved,
                ("constraints.slice_size", "constraints.slice_level"),
            )
        if given.slice_layers is not None:
            resolved["slice_layers"] = self._resolve_layers(given.slice_layers, resolved)
        if given.segment is not None and n > given.segment and n % given.segment:
            raise InvalidInstanceError(
                "constraints.segment",
                f"{given.segment} does not divide the job's {n} nodes (Slurm: a job larger "
                "than a segment is a whole number of segments)",
            )
        if given.block:
            if not self.block_sizes:
                raise InvalidInstanceError(
                    "constraints.block", "needs topology.block_sizes (Slurm BlockSizes)"
                )
            if (
                given.segment is not None
                and n > given.segment
                and self.block_level(given.segment) is None
            ):
                raise InvalidInstanceError(
                    "constraints.segment",
                    f"{given.segment} is larger than every block (topology.block_sizes "
                    f"{list(self.block_sizes)})",
                )
        return Constraints(**resolved)

    def _check_slice(
        self, size: int, level: str, resolved: Mapping[str, Any], fields: tuple[str, str]
    ) -> None:
        """Kueue's rules for the (outermost) slice: its size divides the job, its level is at
        or below the job's level; errors name ``fields`` (size, level)."""
        names, n = self.levels, self.n_nodes
        if n % size:
            raise InvalidInstanceError(
                fields[0], f"{size} does not divide the job's {n} nodes (Kueue needs whole slices)"
            )
        above = resolved.get("required_level") or resolved.get("preferred_level")
        if above is not None and names.index(above) > names.index(level):
            raise InvalidInstanceError(
                fields[1],
                f"{level!r} is above the job's level {above!r} (Kueue: the slice topology must "
                "be at or below the podset topology)",
            )

    def _resolve_layers(
        self, layers: tuple[tuple[int, str | int], ...], resolved: Mapping[str, Any]
    ) -> tuple[tuple[int, str], ...]:
        """Kueue's rules for multi-layer slices (``validateSliceRequiredTopologyConstraints
        Annotation``, ``buildSliceSizeAtLevel``): each layer below the one before, its size
        dividing the one before; the first size divides the job and its level is at or below
        the job's level."""
        names = self.levels
        out: list[tuple[int, str]] = []
        for i, (size, level) in enumerate(layers):
            path = f"constraints.slice_layers[{i}]"
            name = names[self.level(level, f"{path}.level")]
            if i == 0:
                self._check_slice(size, name, resolved, (f"{path}.size", f"{path}.level"))
            else:
                parent_size, parent = out[-1]
                if names.index(name) <= names.index(parent):
                    raise InvalidInstanceError(
                        f"{path}.level",
                        f"{name!r} must be below the layer before, {parent!r} (Kueue: layers "
                        "from the coarsest to the finest)",
                    )
                if parent_size % size:
                    raise InvalidInstanceError(
                        f"{path}.size",
                        f"{size} must evenly divide the parent layer size {parent_size} (Kueue)",
                    )
            out.append((size, name))
        return tuple(out)

    @property
    def n_levels(self) -> int:
        """Levels of the tree: the minipods, the levels of the leaves' paths and the leaves
        (``path_depth + 2``), or 1 when no minipod lists leaves."""
        return self.path_depth + 2 if any(pod.leaves for pod in self.minipods) else 1

    @property
    def levels(self) -> tuple[str, ...]:
        """The names of the levels, top first (:attr:`level_names`, else
        :func:`default_level_names`)."""
        return self.level_names or default_level_names(self.n_levels)

    def level(self, level: int | str, field_path: str = "level") -> int:
        """The index of a level given by index (negative from the bottom) or by name (also
        the part of a label key after its last ``/``).

        Raises
        ------
        InvalidInstanceError
            Naming ``field_path`` and the levels there are.
        """
        names = self.levels
        if isinstance(level, bool):
            raise InvalidInstanceError(field_path, f"must be a level name or index, got {level!r}")
        if isinstance(level, int):
            index = level + len(names) if level < 0 else level
            if 0 <= index < len(names):
                return index
        elif isinstance(level, str):
            if level in names:
                return names.index(level)
            short = [i for i, n in enumerate(names) if n.rsplit("/", 1)[-1] == level]
            if len(short) == 1:
                return short[0]
        raise InvalidInstanceError(
            field_path, f"unknown level {level!r}; the levels are {list(names)} (top first)"
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
        """Number of minipods."""
        return len(self.minipods)

    @property
    def capacities(self) -> tuple[int, ...]:
        """Free nodes of each minipod, in order."""
        return tuple(m.free_nodes for m in self.minipods)

    @property
    def total_free(self) -> int:
        """Free nodes over all minipods."""
        return sum(self.capacities)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the instance (``labels`` only when non-empty)."""
        pods = []
        for pod in self.minipods:
            entry: dict[str, Any] = {"name": pod.name, "free_nodes": pod.free_nodes}
            if pod.leaves:
                entry["leaves"] = [
                    {"name": lf.name, "nodes": list(lf.nodes)}
                    | ({"path": list(lf.path)} if lf.path else {})
                    for lf in pod.leaves
                ]
            pods.append(entry)
        out = self.json_header()
        out["topology"] = {"gpus_per_node": self.gpus_per_node, "minipods": pods}
        if self.level_names:
            out["topology"]["level_names"] = list(self.level_names)
        if self.block_sizes:
            out["topology"]["block_sizes"] = list(self.block_sizes)
        out["job"] = {"dp": self.dp, "tp": self.tp, "pp": self.pp}
        out["alpha"] = self.alpha
        if self.objective.multilevel:
            out["objective"] = self.objective.to_dict()
        if self.constraints:
            out["constraints"] = self.constraints.to_dict()
        return out

    @classmethod
    def from_topology(cls, topology: Topology, **options: Any) -> PlacementInstance:
        r"""The instance of one job on the free nodes of a real cluster's ``topology``.

        Same as :func:`topoopt.placement.cluster.from_topology` (which documents the options
        ``level``, ``free``, ``dp``, ``tp``, ``pp``, ``alpha``, ``leaf_level``, ...).

        Examples
        --------
        >>> from topoopt.topology import parse_slurm_conf
        >>> topo = parse_slurm_conf("SwitchName=a Nodes=n[0-3]\nSwitchName=b Nodes=n[4-7]\n")
        >>> inst = PlacementInstance.from_topology(
        ...     topo, level=0, free={"n0", "n1", "n5"}, dp=3, tp=8, pp=1, alpha=0.5)
        >>> [(m.name, m.free_nodes) for m in inst.minipods]
        [('a', 2), ('b', 1)]
        """
        from topoopt.placement.cluster import from_topology

        return from_topology(topology, **options)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, files: FileAccess | None = None
    ) -> PlacementInstance:
        """Read the JSON object of the family (see ``docs/placement.md`` for the schema).

        Only takes the object apart (missing ``topology``, ``job``, ``job.dp``, ... are
        reported here); every other rule is the constructor's. ``name`` defaults to
        ``"unnamed"``, ``topology.gpus_per_node`` to 8 and ``labels`` to ``{}``.
        """
        topology = v.as_mapping(v.field(data, "topology"), "topology")
        job = v.as_mapping(v.field(data, "job"), "job")
        return cls(
            name=data.get("name", "unnamed"),
            minipods=v.field(topology, "minipods", "topology"),
            dp=v.field(job, "dp", "job"),
            tp=v.field(job, "tp", "job"),
            pp=v.field(job, "pp", "job"),
            alpha=v.field(data, "alpha"),
            gpus_per_node=topology.get("gpus_per_node", DEFAULT_GPUS_PER_NODE),
            labels=data.get("labels", {}),
            level_names=topology.get("level_names", ()),
            block_sizes=topology.get("block_sizes", ()),
            objective=as_objective(data.get("objective")),
            constraints=as_constraints(data.get("constraints")),
        )
