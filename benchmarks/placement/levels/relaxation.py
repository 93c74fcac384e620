"""How far a counting relaxation of the level below the split can go (issue #30, measured).

Usage::

    python benchmarks/placement/levels/relaxation.py --seed 0 --rows 128 --cols 8 --pod 0 \\
        --split 2,4 3,3 4,2 --pairs 12,8 13,7 11,9

For one pod of ``goal_instance`` (the benchmark's 16,384-node tree), a level-``l`` pair
``(A1, B1)`` (``--split``, groups per column and per row) and a rack pair ``(A2, B2)``
(``--pairs``), decides by HiGHS (``SparseMilp``) whether the **counting relaxation of the
two levels together** admits them: per group ``g`` its rows ``a_g``, columns ``b_g`` and
cells ``n_g <= min(f_g, a_g b_g)`` (Arnold eq. 1, one cell per node), per rack ``j`` of ``g``
its rows ``a_j``, columns ``b_j`` and cells ``n_j <= min(f_j, a_j b_j)`` with
``sum_{j in g} n_j = n_g``, ``a_j <= a_g`` and ``b_j <= b_g`` (dropped with
``--uncoupled``), and the budgets ``sum_g a_g <= rows B1``,
``sum_g b_g <= cols A1``, ``sum_j a_j <= rows B2``, ``sum_j b_j <= cols A2``,
``sum_j n_j = rows cols``. The products are linearised through one-hot ``b`` (``b <= cols``).

Every placement with those spreads gives a solution, so ``infeasible`` refutes the pair
(a valid bound); ``feasible`` means that no bound of this family (the counting per switch
of ``whole_side.py`` included) refutes it. The numbers quoted in ``docs/levels.md`` come
from this script (one process, one HiGHS thread, shared VM). It is a measurement, not part of
the solver: a model per pair takes 0.3-60 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from levels import goal_instance

from topoopt.placement.exact_mip._milp import SparseMilp, Status
from topoopt.placement.tree import build_tree


def racks_of_pod(seed: int, rows: int, cols: int, pod: int) -> list[list[int]]:
    """Free nodes of the racks of each group of ``pod`` (racks with a free node)."""
    tree = build_tree(goal_instance(seed, rows, cols))
    caps = tree.capacity[2]
    return [
        [int(caps[c]) for c in tree.children(1)[g] if caps[c] > 0] for g in tree.children(0)[pod]
    ]


def _one_hot(milp: SparseMilp, most: int) -> list[int]:
    """Binaries ``y_0 .. y_most`` with exactly one set (the value is ``sum k y_k``)."""
    y = [milp.var(0, 1, integer=True) for _ in range(most + 1)]
    milp.row(dict.fromkeys(y, 1.0), 1, 1)
    return y


def _cells(milp: SparseMilp, y: list[int], count: int, most_count: int) -> dict[int, float]:
    """Coefficients of ``b * a`` (``b`` one-hot in ``y``, ``a`` the column ``count``):
    ``z_k <= most_count y_k``, ``sum_k z_k <= a``; returns ``{z_k: k}``."""
    z = [milp.var(0, most_count) for _ in y]
    for k, zk in enumerate(z):
        milp.row({zk: 1.0, y[k]: -float(most_count)}, upper=0)
    milp.row({**dict.fromkeys(z, 1.0), count: -1.0}, upper=0)
    return {zk: float(k) for k, zk in enumerate(z)}


def admits(
    groups: list[list[int]],
    rows: int,
    cols: int,
    split: tuple[int, int],
    pair: tuple[int, int],
    coupled: bool = True,
    time_limit: float = 60.0,
) -> Status:
    """Whether the relaxation (module docstring) admits the level-``l`` pair ``split`` and
    the rack pair ``pair``: ``feasible``, ``infeasible`` or ``unknown`` (time limit)."""
    (a1, b1), (a2, b2) = split, pair
    milp = SparseMilp()
    group_rows: dict[int, float] = {}
    group_cols: dict[int, float] = {}
    rack_rows: dict[int, float] = {}
    rack_cols: dict[int, float] = {}
    total: dict[int, float] = {}
    for racks in groups:
        y = _one_hot(milp, cols)
        a_g = milp.var(0, rows, integer=True)
        n_g = milp.var(0, sum(racks))
        milp.row({n_g: 1.0, **{k: -v for k, v in _cells(milp, y, a_g, rows).items()}}, upper=0)
        group_rows[a_g] = 1.0
        group_cols.update({yk: float(k) for k, yk in enumerate(y)})
        inside = {n_g: -1.0}
        for f in racks:
            q = _one_hot(milp, cols)
            a_j = milp.var(0, min(rows, f), integer=True)
            n_j = milp.var(0, f)
            cells = _cells(milp, q, a_j, min(rows, f))
            milp.row({n_j: 1.0, **{k: -v for k, v in cells.items()}}, upper=0)
            if coupled:
                wider = {qk: float(k) for k, qk in enumerate(q)}
                for k, yk in enumerate(y):
                    wider[yk] = wider.get(yk, 0.0) - k
                milp.row(wider, upper=0)  # b_j <= b_g
                milp.row({a_j: 1.0, a_g: -1.0}, upper=0)  # a_j <= a_g
            rack_rows[a_j] = 1.0
            rack_cols.update({qk: float(k) for k, qk in enumerate(q)})
            inside[n_j] = 1.0
            total[n_j] = 1.0
        milp.row(inside, 0, 0)
    milp.row(group_rows, upper=rows * b1)
    milp.row(group_cols, upper=cols * a1)
    milp.row(rack_rows, upper=rows * b2)
    milp.row(rack_cols, upper=cols * a2)
    milp.row(total, lower=rows * cols)
    return milp.solve(time_limit)[0]


def _pair(text: str) -> tuple[int, int]:
    a, b = text.split(",")
    return int(a), int(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", type=int, default=128)
    parser.add_argument("--cols", type=int, default=8)
    parser.add_argument("--pod", type=int, default=0)
    parser.add_argument("--split", type=_pair, nargs="+", default=[(2, 4), (3, 3), (4, 2)])
    parser.add_argument("--pairs", type=_pair, nargs="+", required=True)
    parser.add_argument("--uncoupled", action="store_true")
    parser.add_argument("--limit", type=float, default=60.0)
    args = parser.parse_args()
    groups = racks_of_pod(args.seed, args.rows, args.cols, args.pod)
    for split in args.split:
        for pair in args.pairs:
            t0 = time.perf_counter()
            status = admits(
                groups, args.rows, args.cols, split, pair, not args.uncoupled, args.limit
            )
            print(f"split {split} racks {pair}: {status} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
