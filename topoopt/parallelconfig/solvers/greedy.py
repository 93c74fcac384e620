"""``parallelconfig/greedy``: a baseline that packs GPUs node by node.

For every pipeline depth ``p = 1 .. min(L, r)`` it takes the largest data-parallel degree that
fits, ``d = min(floor(r / p), M)`` (only the fixed ``(d, p)`` when the instance has one), and
packs the grid onto the GPUs listed node by node, the nodes with the most GPUs first:

* ``packing="replica"`` (default): replica after replica, each replica's stages on consecutive
  GPUs (pipeline sends stay inside a node where they can);
* ``packing="stage"``: stage after stage, each stage's ``d`` GPUs consecutive (all-reduce rings
  stay inside a node where they can);
* ``packing="best"``: both, the cheaper one.

The cheapest ``(d, p)`` wins (ties: the smaller ``p``). It never idles GPUs it could use and
never splits a replica or a stage group cleverly; the MIP and the oracle do. ``O(min(L, r) · r)``
work; the time limit is checked between depths.
"""

from __future__ import annotations

from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import ParallelConfig, breakdown, from_nodes

PACKINGS = ("replica", "stage", "best")
"""Values of the ``packing`` option."""


def node_order(instance: ParallelConfigInstance, count: int) -> list[int]:
    """The node of each of the first ``count`` GPUs, listed node by node, the nodes with the
    most GPUs first (ties: instance order).

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import uneven
    >>> node_order(uneven(), 6)  # nodes of 3, 2 and 1 GPUs
    [0, 0, 0, 1, 1, 2]
    """
    order: list[int] = []
    for node in sorted(range(instance.n_nodes), key=lambda n: -instance.nodes[n].gpus):
        order.extend([node] * min(instance.nodes[node].gpus, count - len(order)))
        if len(order) == count:
            break
    return order


def packed(instance: ParallelConfigInstance, d: int, p: int, packing: str) -> list[list[int]]:
    """The node grid of ``d x p`` cells packed ``"replica"``- or ``"stage"``-major.

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import uneven
    >>> packed(uneven(), 2, 3, "replica"), packed(uneven(), 2, 3, "stage")
    ([[0, 0, 0], [1, 1, 2]], [[0, 0, 1], [0, 1, 2]])
    """
    flat = node_order(instance, d * p)
    if packing == "replica":
        return [flat[j * p : (j + 1) * p] for j in range(d)]
    return [[flat[s * d + j] for s in range(p)] for j in range(d)]


def best_packing(
    instance: ParallelConfigInstance,
    d: int,
    p: int,
    packings: tuple[str, ...] = ("replica", "stage"),
) -> tuple[float, list[list[int]]]:
    """The cheapest of ``packings`` for ``(d, p)``: its objective and node grid."""
    stages = instance.model.stages(p)
    best: tuple[float, list[list[int]]] | None = None
    for packing in packings:
        grid = packed(instance, d, p, packing)
        value = breakdown(instance, d, p, grid, stages).objective
        if best is None or value < best[0]:
            best = (value, grid)
    assert best is not None
    return best


def greedy(
    instance: ParallelConfigInstance, packing: str = "replica", ctx: SolveContext | None = None
) -> tuple[ParallelConfig, int, int]:
    """The greedy configuration (module docstring), the depths tried and the depths there were
    (fewer tried when ``ctx``'s time limit passed)."""
    if packing not in PACKINGS:
        raise InvalidOptionError(f"packing: must be one of {', '.join(PACKINGS)}, got {packing!r}")
    packings = ("replica", "stage") if packing == "best" else (packing,)
    if instance.parallelism is not None:
        candidates = [instance.parallelism]
    else:
        r, micro = instance.n_gpus, instance.model.micro_batches
        candidates = [
            (min(r // p, micro), p) for p in range(1, min(instance.model.n_layers, r) + 1)
        ]
    best: tuple[float, list[list[int]]] | None = None
    tried = 0
    for d, p in candidates:
        if best is not None and ctx is not None and ctx.expired():
            break
        value, grid = best_packing(instance, d, p, packings)
        tried += 1
        if best is None or value < best[0]:
            best = (value, grid)
    assert best is not None
    return from_nodes(instance, best[1]), tried, len(candidates)


@register_solver
class GreedySolver(Solver):
    """Baseline: for every depth p the largest d that fits, GPUs packed node by node.

    Option ``packing``: ``"replica"`` (default; each replica on consecutive GPUs), ``"stage"``
    (each stage group on consecutive GPUs) or ``"best"`` (the cheaper of both).
    """

    name = "parallelconfig/greedy"
    family = "parallelconfig"

    def _solve(
        self, instance: ParallelConfigInstance, ctx: SolveContext, *, packing: str = "replica"
    ) -> Attempt:
        config, tried, total = greedy(instance, packing, ctx)
        return Attempt(
            config,
            TerminationReason.COMPLETED if tried == total else TerminationReason.TIME_LIMIT,
            message=f"{tried} of {total} depths tried",
        )
