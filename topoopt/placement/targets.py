"""Target spreads: the structure behind the fast exact solver of the placement family.

The score depends on a placement only through ``A`` = the most minipods any column (DP
group) touches and ``B`` = the most any row (PP group) touches:
``score = alpha * D(A) + beta * D(B)`` with ``D(k) = k if k >= 2 else 0``. Feasibility of
"every column touches at most ``A`` and every row at most ``B`` minipods" is monotone in both,
so the optimum is the lowest-scoring feasible pair. This module decides pairs:

* :func:`monochrome_columns` / :func:`monochrome_rows` decide ``A = 1`` / ``B = 1`` exactly:
  with ``A = 1`` every column sits in one minipod, which then holds ``floor(f_j / rows)``
  columns at most, and every row touches every minipod used;
* :func:`counting_bound_allows` is a necessary condition (a relaxation): if minipod ``j`` is
  touched by ``a_j`` rows and ``b_j`` columns it hosts at most ``min(f_j, a_j * b_j)`` cells,
  while ``sum_j a_j <= rows * B`` and ``sum_j b_j <= cols * A``;
* :func:`block_design` is a sufficient construction: rows in ``p <= A`` groups, columns in
  ``q <= B`` groups, each of the ``p * q`` blocks packed whole into one minipod.

Pairs these cannot decide go to the feasibility MIP
(:func:`topoopt.placement.formulations.exact.build_feasibility`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement, spread


@dataclass(frozen=True)
class TargetPair:
    """A candidate ``(A, B)``: most minipods per column (DP) and per row (PP)."""

    score: float
    max_dp_use: int
    max_pp_use: int


def target_pairs(instance: PlacementInstance) -> list[TargetPair]:
    """Every ``(A, B)`` with ``1 <= A <= min(rows, M)``, ``1 <= B <= min(cols, M)``, by score.

    Ties are broken by ``A + B`` so that smaller (easier to refute) pairs come first.
    """
    n_pods = instance.n_minipods
    pairs = [
        TargetPair(
            score=instance.alpha * spread(range(a)) + instance.beta * spread(range(b)),
            max_dp_use=a,
            max_pp_use=b,
        )
        for a in range(1, min(instance.rows, n_pods) + 1)
        for b in range(1, min(instance.cols, n_pods) + 1)
    ]
    return sorted(pairs, key=lambda p: (round(p.score, 12), p.max_dp_use + p.max_pp_use))


def _whole_groups(
    instance: PlacementInstance, group_size: int, n_groups: int, max_pods: int
) -> list[int] | None:
    """Pods for ``n_groups`` groups of ``group_size`` cells, each group whole in one pod,
    using at most ``max_pods`` pods; ``None`` if impossible. Largest pods first."""
    fits = sorted(
        range(instance.n_minipods), key=lambda j: (-(instance.capacities[j] // group_size), j)
    )[:max_pods]
    owner: list[int] = []
    for j in fits:
        owner += [j] * min(instance.capacities[j] // group_size, n_groups - len(owner))
    return owner if len(owner) == n_groups else None


def monochrome_columns(instance: PlacementInstance, max_pp_use: int) -> Placement | None:
    """A placement with every column in one minipod and rows touching ``<= max_pp_use``
    minipods, or ``None`` when none exists (exact)."""
    owner = _whole_groups(instance, instance.rows, instance.cols, max_pp_use)
    if owner is None:
        return None
    return Placement.from_rows([owner] * instance.rows)


def monochrome_rows(instance: PlacementInstance, max_dp_use: int) -> Placement | None:
    """A placement with every row in one minipod and columns touching ``<= max_dp_use``
    minipods, or ``None`` when none exists (exact)."""
    owner = _whole_groups(instance, instance.cols, instance.rows, max_dp_use)
    if owner is None:
        return None
    return Placement.from_rows([[j] * instance.cols for j in owner])


class CountingBound:
    """The counting relaxation of every target pair at once (one dynamic program).

    ``best[sa, sb]`` is the largest ``sum_j min(f_j, a_j * b_j)`` over choices with
    ``sum_j a_j = sa`` and ``sum_j b_j = sb`` (``0 <= a_j <= rows``, ``0 <= b_j <= cols``).
    A pair ``(A, B)`` survives when some ``sa <= rows * B``, ``sb <= cols * A`` reaches
    ``rows * cols``.
    """

    def __init__(self, instance: PlacementInstance) -> None:
        self.instance = instance

    @cached_property
    def best(self) -> np.ndarray:
        inst = self.instance
        rows, cols = inst.rows, inst.cols
        max_a = rows * min(cols, inst.n_minipods)
        max_b = cols * min(rows, inst.n_minipods)
        table = np.full((max_a + 1, max_b + 1), -np.inf)
        table[0, 0] = 0.0
        for free in inst.capacities:
            new = table.copy()
            for b in range(1, cols + 1):
                for a in range(1, min(rows, -(-free // b)) + 1):
                    gain = min(free, a * b)
                    target = new[a:, b:]
                    np.maximum(target, table[: max_a + 1 - a, : max_b + 1 - b] + gain, out=target)
            table = new
        return np.maximum.accumulate(np.maximum.accumulate(table, axis=0), axis=1)

    def allows(self, max_dp_use: int, max_pp_use: int) -> bool:
        """Whether the relaxation admits the pair (``False`` proves it infeasible)."""
        inst = self.instance
        sa = min(inst.rows * max_pp_use, self.best.shape[0] - 1)
        sb = min(inst.cols * max_dp_use, self.best.shape[1] - 1)
        return bool(self.best[sa, sb] >= inst.n_nodes)


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + 1] * extra + [base] * (parts - extra)


def block_design(instance: PlacementInstance, max_dp_use: int, max_pp_use: int) -> Placement | None:
    """Try row groups x column groups with each block whole in one minipod.

    For ``p <= max_dp_use`` row groups and ``q <= max_pp_use`` column groups of balanced
    sizes, blocks are packed best-fit decreasing into minipods. Returns the first placement
    found, or ``None`` (which proves nothing).
    """
    rows, cols = instance.rows, instance.cols
    for p in range(1, min(max_dp_use, rows) + 1):
        for q in range(1, min(max_pp_use, cols) + 1):
            row_sizes, col_sizes = _split(rows, p), _split(cols, q)
            blocks = sorted(
                (
                    (rs * cs, i, k)
                    for i, rs in enumerate(row_sizes)
                    for k, cs in enumerate(col_sizes)
                ),
                reverse=True,
            )
            free = list(instance.capacities)
            owner: dict[tuple[int, int], int] = {}
            for size, i, k in blocks:
                fitting = [j for j in range(len(free)) if free[j] >= size]
                if not fitting:
                    break
                j = min(fitting, key=lambda j: (free[j], j))
                free[j] -= size
                owner[i, k] = j
            else:
                row_group = np.repeat(np.arange(p), row_sizes)
                col_group = np.repeat(np.arange(q), col_sizes)
                return Placement.from_rows(
                    [[owner[row_group[r], col_group[c]] for c in range(cols)] for r in range(rows)]
                )
    return None
