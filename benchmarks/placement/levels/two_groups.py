"""Issue #30: the exact model of one two-group class of the walk, aggregated by row types.

Usage::

    python benchmarks/placement/levels/two_groups.py --seed 1 --rows 32 --cols 8 \\
        --pod 3 --groups 7 10 --pair 5 5 --limit 600

The class (``docs/levels.md``, "What is still unproven"): the job's columns are whole in two
groups of one pod (``--split`` of them in the first, the rest in the second), every column on
at most ``A`` racks, every row on at most ``B`` racks over both groups (the rack pair
``(A, B)``). Rows are interchangeable, so the model counts them by type instead of placing
them one by one:

* ``y[k, j, T]`` rows whose cells in rack ``j`` of group ``k`` are exactly the columns ``T``;
* ``u[k, c, j]`` column ``c`` touches rack ``j`` (``sum_{T ∋ c} y[k, j, T] <= min(f_j, rows)
  u[k, c, j]``: the column's cells there, one per row; ``sum_j u[k, c, j] <= A``; this
  aggregated row instead of ``y[k, j, T] <= rows u[k, c, j]`` per block took the 256-node
  seed-1 class from 98 s to 31 s, seed 2 from 123-144 s to 96 s);
* ``w[P, Q]`` rows whose racks split their columns of the first group as the set partition
  ``P`` and those of the second as ``Q``, ``|P| + |Q| <= B``, ``sum w = rows``;
* every block ``T`` is used as often as the rows' partitions hold it
  (``sum_j y[k, j, T] = sum_{P, Q : T in P (or Q)} w[P, Q]``) and a rack holds at most its
  free nodes (``sum_T |T| y[k, j, T] <= f_j``).

A solution is a placement: give each row of type ``(P, Q)`` a rack for each block from the
``y`` left (two blocks of a row in one rack only lower its rack count); each column then lies
on its ``u`` racks and every rack holds at most its free nodes. Conversely every placement of
the class gives such counts. So the model decides the class exactly (with ``rows * cols * K``
cell binaries the direct model did not answer in 600 s). When it is feasible the script builds
that placement, checks it with the family's ``check`` and prints its scores at every level
beside ``placement/levels``'. The set partitions grow as Bell numbers: up to about 5 columns
per group. ``placement/levels`` now realises these classes itself, in about a second, by the
rack patterns of :mod:`topoopt.placement.paired_racks` (every rack touched by at most two
columns).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator, Sequence

import pyomo.environ as pyo
from pyomo.contrib.appsi.solvers import Highs

import topoopt
from topoopt.placement.generate import levels_tree
from topoopt.placement.tree import build_tree, level_scores, placement_from_leaves

Block = frozenset[int]
Partition = tuple[Block, ...]


def set_partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    """Every set partition of ``items`` (Bell many)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in set_partitions(rest):
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1 :]]
        yield [[first], *partition]


def row_type_model(
    racks: Sequence[Sequence[int]], columns: Sequence[int], rows: int, a: int, b: int
) -> tuple[pyo.ConcreteModel, list[tuple[Partition, ...]], list[list[Block]]]:
    """The aggregated model (module docstring) of two groups with free nodes ``racks[k]`` and
    ``columns[k]`` columns each; returns it with the row types and each group's blocks."""
    parts = [
        [tuple(frozenset(block) for block in p) for p in set_partitions(list(range(n)))]
        for n in columns
    ]
    blocks = [sorted({block for p in group for block in p}, key=sorted) for group in parts]
    types = [(p, q) for p in parts[0] for q in parts[1] if len(p) + len(q) <= b]
    m = pyo.ConcreteModel()
    m.y = pyo.Var(
        [(k, j, t) for k in (0, 1) for j in range(len(racks[k])) for t in range(len(blocks[k]))],
        domain=pyo.NonNegativeIntegers,
    )
    m.u = pyo.Var(
        [(k, c, j) for k in (0, 1) for c in range(columns[k]) for j in range(len(racks[k]))],
        domain=pyo.Binary,
    )
    m.w = pyo.Var(range(len(types)), domain=pyo.NonNegativeIntegers)
    m.rules = pyo.ConstraintList()
    m.rules.add(pyo.quicksum(m.w.values()) == rows)
    for k in (0, 1):
        for j, free in enumerate(racks[k]):
            m.rules.add(
                pyo.quicksum(len(block) * m.y[k, j, t] for t, block in enumerate(blocks[k])) <= free
            )
            for c in range(columns[k]):  # column c's cells on rack j, at most one per row
                m.rules.add(
                    pyo.quicksum(m.y[k, j, t] for t, block in enumerate(blocks[k]) if c in block)
                    <= min(free, rows) * m.u[k, c, j]
                )
        for c in range(columns[k]):
            m.rules.add(pyo.quicksum(m.u[k, c, j] for j in range(len(racks[k]))) <= a)
        for t, block in enumerate(blocks[k]):
            m.rules.add(
                pyo.quicksum(m.y[k, j, t] for j in range(len(racks[k])))
                == pyo.quicksum(m.w[i] for i, pair in enumerate(types) if block in pair[k])
            )
    m.objective = pyo.Objective(expr=0)
    return m, types, blocks


def cell_racks(
    m: pyo.ConcreteModel,
    types: Sequence[tuple[Partition, ...]],
    blocks: Sequence[Sequence[Block]],
    columns: Sequence[int],
) -> list[list[tuple[int, int]]]:
    """Each row's ``(group, rack)`` per column, from the solved counts (module docstring)."""
    left = {key: round(pyo.value(var)) for key, var in m.y.items()}
    out = []
    for i, pair in enumerate(types):
        for _ in range(round(pyo.value(m.w[i]))):
            row: list[tuple[int, int]] = [(-1, -1)] * sum(columns)
            for k in (0, 1):
                offset = columns[0] if k else 0
                for block in pair[k]:
                    t = blocks[k].index(block)
                    j = next(j for (kk, j, tt), n in left.items() if (kk, tt) == (k, t) and n > 0)
                    left[k, j, t] -= 1
                    for c in block:
                        row[offset + c] = (k, j)
            out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--cols", type=int, default=8)
    parser.add_argument("--pod", type=int, required=True)
    parser.add_argument("--groups", type=int, nargs=2, required=True)
    parser.add_argument("--split", type=int, help="columns in the first group (default: half)")
    parser.add_argument("--pair", type=int, nargs=2, required=True, metavar=("A", "B"))
    parser.add_argument("--limit", type=float, default=600.0)
    args = parser.parse_args()
    inst = levels_tree(seed=args.seed, rows=args.rows, cols=args.cols)[0]
    tree = build_tree(inst)
    leaf_index = {tuple(key): k for k, key in enumerate(tree.leaf_key)}
    by_group: dict[str, list[tuple[int, int]]] = {}
    for local, leaf in enumerate(inst.minipods[args.pod].leaves):
        by_group.setdefault(leaf.path[0], []).append((leaf_index[args.pod, local], len(leaf.nodes)))
    chosen = [by_group[f"g{g}"] for g in args.groups]
    split = args.cols // 2 if args.split is None else args.split
    columns = (split, args.cols - split)
    a, b = args.pair
    m, types, blocks = row_type_model(
        [[free for _, free in group] for group in chosen], columns, args.rows, a, b
    )
    opt = Highs()
    opt.config.time_limit = args.limit
    opt.config.load_solution = False
    start = time.perf_counter()
    result = opt.solve(m)
    seconds = time.perf_counter() - start
    condition = result.termination_condition.name
    print(f"{inst.name} pod {args.pod} groups {args.groups} columns {columns} racks ({a}, {b}): "
          f"{condition} in {seconds:.1f} s ({len(types)} row types)")  # fmt: skip
    if result.best_feasible_objective is None:
        return
    result.solution_loader.load_vars()
    grid = [[chosen[k][j][0] for k, j in row] for row in cell_racks(m, types, blocks, columns)]
    placement = placement_from_leaves(inst, tree, grid)
    print("check:", topoopt.get_family("placement").check(inst, placement) or "no violation")
    print("scores pod / group / rack:", [s.score for s in level_scores(inst, placement)])
    ours = topoopt.solve(inst, "placement/levels", time_limit=10, threads=1)
    keys = ("minipod_score", "level1_score", "leaf_score")
    print("placement/levels:", [ours.metrics[k] for k in keys], "bounds",
          [ours.metrics[k.replace("score", "bound")] for k in keys])  # fmt: skip


if __name__ == "__main__":
    main()
