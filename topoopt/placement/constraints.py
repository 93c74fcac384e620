"""The rules of :class:`~topoopt.placement.instance.Constraints` on the tree of an instance.

* :func:`slice_rules` — the slices as ``(size, level)`` pairs (Kueue slices; a Slurm segment
  is a slice at the leaves);
* :func:`job_level` — the level whose one switch must hold the whole job: the required level,
  or the preferred level resolved as Kueue does (the level itself if a switch can hold the
  job, else the level above, ...; ``None`` when not even a minipod can);
* :func:`room` — free nodes a switch offers to the job once slices must stay whole;
* :func:`violations` — the rules a placement breaks (for
  :func:`~topoopt.placement.solution.check`), each naming its field;
* :func:`infeasible_reason` — a necessary condition every solver checks first, so that an
  impossible request is an ``infeasible`` result naming the constraint.

See ``docs/levels.md``, "Constraints".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from topoopt.placement.instance import PlacementInstance
from topoopt.placement.tree import Tree


def slice_rules(instance: PlacementInstance) -> list[tuple[int, int, str]]:
    """``(size, level index, field)`` of every slice rule: Kueue's slices, and a Slurm segment
    (a slice at the leaves) when the job has more nodes than a segment."""
    c = instance.constraints
    out: list[tuple[int, int, str]] = []
    if c.slice_size is not None and c.slice_size > 1:
        assert c.slice_level is not None
        out.append((c.slice_size, instance.level(c.slice_level), "constraints.slice_size"))
    for i, (size, level_name) in enumerate(c.slice_layers or ()):
        if size > 1:
            field = f"constraints.slice_layers[{i}]"
            out.append((size, instance.level(level_name), field))
    if c.segment is not None and c.segment > 1 and instance.n_nodes > c.segment:
        level: int | None = instance.n_levels - 1
        if c.block:  # Slurm topology/block: the smallest block that holds a segment
            level = instance.block_level(c.segment)
        assert level is not None, "validated by the instance"
        out.append((c.segment, level, "constraints.segment"))
    return out


def room(instance: PlacementInstance, tree: Tree, level: int) -> np.ndarray:
    """Free nodes each level-``level`` switch can give the job with every slice whole.

    A slice of size ``s`` at level ``l`` lies whole under one level-``l`` switch, so what the
    job takes under such a switch is a multiple of ``s``; a switch above takes the sum of its
    children's. From the finest rule at or below ``level`` up: a switch's room is the sum of
    its children's (its free nodes at the finest such level), rounded down to a multiple of
    every size ruling its level (for nested rules, as Kueue's multi-layer slices, exactly the
    whole slices it can hold; Kueue's ``fillInCountsHelper`` rounds the same way). Rules
    coarser than ``level`` do not bind it (any free node of the switch may take a part)."""
    rules = [(size, at) for size, at, _ in slice_rules(instance) if at >= level]
    if not rules:
        return tree.capacity[level].astype(np.int64)
    finest = max(at for _, at in rules)
    out = tree.capacity[finest].astype(np.int64)
    for lv in range(finest, level - 1, -1):
        if lv < finest:
            out = np.bincount(tree.parent[lv + 1], weights=out, minlength=len(tree.capacity[lv]))
            out = out.astype(np.int64)
        sizes = [size for size, at in rules if at == lv]
        if sizes:
            unit = math.lcm(*sizes)
            out = out // unit * unit
    return out


def job_level(instance: PlacementInstance, tree: Tree) -> int | None:
    """The level one of whose switches must hold the job: ``required_level``, or
    ``preferred_level`` resolved as Kueue does (from it upwards, the first level where a
    switch can hold the job; ``None`` when none can), else ``None``."""
    c = instance.constraints
    if c.required_level is not None:
        return instance.level(c.required_level)
    if c.block and (c.segment is None or instance.n_nodes <= c.segment):
        return instance.block_level(instance.n_nodes)  # Slurm: one block that holds the job
    if c.preferred_level is None:
        return None
    n = instance.n_nodes
    for level in range(instance.level(c.preferred_level), -1, -1):
        if int(room(instance, tree, level).max()) >= n:
            return level
    return None


def _slice_of(instance: PlacementInstance, size: int) -> np.ndarray:
    """``rows x cols``: the slice of every cell (rank ``c * rows + r`` over ``size``)."""
    rows, cols = instance.rows, instance.cols
    ranks = np.arange(cols)[None, :] * rows + np.arange(rows)[:, None]
    return ranks // size


def violations(instance: PlacementInstance, tree: Tree, leaves: np.ndarray) -> list[str]:
    """The constraints broken by cells on ``leaves`` (``rows x cols`` leaf indices of
    ``tree``), each message starting with the field (``constraints.slice_size: ...``).
    ``preferred_level`` is a preference, not a rule."""
    c = instance.constraints
    out: list[str] = []
    names = instance.levels
    level = job_level(instance, tree) if c.required_level is not None or c.block else None
    if level is not None:
        used = np.unique(tree.switch[level][leaves])
        if len(used) > 1:
            shown = ", ".join(tree.switch_names[level][s] for s in used[:4].tolist())
            field = "required_level" if c.required_level is not None else "block"
            out.append(
                f"constraints.{field}: the job is on {len(used)} {names[level]} "
                f"switches ({shown}), not one"
            )
    for size, level, field in slice_rules(instance):
        slice_of = _slice_of(instance, size)
        switches = tree.switch[level][leaves]
        for t in range(instance.n_nodes // size):
            used = np.unique(switches[slice_of == t])
            if len(used) > 1:
                out.append(
                    f"{field}: slice {t} (ranks {t * size}..{t * size + size - 1}) is on "
                    f"{len(used)} {names[level]} switches, not one"
                )
                break
    if c.max_switches is not None:
        n_used = len(np.unique(leaves))
        if n_used > c.max_switches:
            out.append(
                f"constraints.max_switches: the job is on {n_used} {names[-1]} switches, more "
                f"than {c.max_switches}"
            )
    return out


def _largest(values: Sequence[int], count: int) -> int:
    return int(sum(sorted(values, reverse=True)[:count]))


def infeasible_reason(instance: PlacementInstance, tree: Tree) -> str | None:
    """Why no placement can respect the constraints, when that shows from the free nodes
    alone (a necessary condition), naming the field; else ``None``.

    Examples
    --------
    >>> from topoopt.placement.generate import tree_instance
    >>> from topoopt.placement.tree import build_tree
    >>> from topoopt.placement.instance import Constraints
    >>> inst = tree_instance("t", [[[2, 1], [3]]], rows=2, cols=2, alpha=0.5,
    ...                      constraints=Constraints(required_level="rack"))
    >>> print(infeasible_reason(inst, build_tree(inst)))
    constraints.required_level: no rack can hold the job's 4 nodes (the most one can is 3)
    """
    c = instance.constraints
    if not c:
        return None
    n = instance.n_nodes
    names = instance.levels
    level = job_level(instance, tree)
    if (c.required_level is not None or c.block) and level is not None:
        most = int(room(instance, tree, level).max())
        if most < n:
            field = "required_level" if c.required_level is not None else "block"
            return (
                f"constraints.{field}: no {names[level]} can hold the job's {n} nodes "
                f"(the most one can is {most})"
            )
    for size, at, field in slice_rules(instance):
        whole = int((tree.capacity[at] // size).sum())
        if whole * size < n:
            return (
                f"{field}: the {names[at]} switches hold {whole} whole slices of {size} nodes, "
                f"the job needs {n // size}"
            )
    if c.max_switches is not None:
        leaf_room = room(instance, tree, tree.n_levels - 1)
        most = _largest(leaf_room.tolist(), c.max_switches)
        if most < n:
            return (
                f"constraints.max_switches: the {c.max_switches} {names[-1]} switches with the "
                f"most room hold {most} of the job's {n} nodes"
            )
    return None


def unhonoured_reason(instance: PlacementInstance) -> str | None:
    """Why a solver that ignores constraints must decline ``instance`` (``None`` without
    constraints)."""
    if not instance.constraints:
        return None
    fields = ", ".join(f"constraints.{name}" for name in instance.constraints.to_dict())
    return (
        f"it states {fields}, which this solver does not honour; placement/levels and "
        "placement/enumerate do"
    )
