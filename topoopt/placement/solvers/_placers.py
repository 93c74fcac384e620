"""What the production placers (Kueue, Slurm, Volcano, KAI) share: their answer as a placement
in the launcher's rank order, and a job they leave waiting."""

from __future__ import annotations

from collections.abc import Sequence

from topoopt.core.solver import Attempt
from topoopt.core.status import TerminationReason
from topoopt.placement.constraints import infeasible_reason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement
from topoopt.placement.tree import Tree, build_tree


def ranked_placement(instance: PlacementInstance, ranked: Sequence[tuple[str, int]]) -> Placement:
    """Rank ``k`` on ``ranked[k] = (node, minipod index)``: cell ``(k % rows, k // rows)``, the
    launcher's node rank ``k = c * rows + r`` (Megatron's order)."""
    rows = instance.rows
    matrix = [[0] * instance.cols for _ in range(rows)]
    names = [[""] * instance.cols for _ in range(rows)]
    for rank, (node, pod) in enumerate(ranked[: instance.n_nodes]):
        r, c = rank % rows, rank // rows
        matrix[r][c], names[r][c] = pod, node
    return Placement.from_rows(matrix, names)


def pending(instance: PlacementInstance, message: str, tree: Tree | None = None) -> Attempt:
    """The placer leaves the job waiting: ``infeasible`` naming the constraint when the free
    nodes show the request impossible, else no solution with the placer's ``message``."""
    reason = infeasible_reason(instance, build_tree(instance) if tree is None else tree)
    if reason is not None:
        return Attempt(None, TerminationReason.INFEASIBLE, message=reason)
    return Attempt(None, TerminationReason.COMPLETED, message=message)
