"""The Lagrangian counting bound with its knapsack relaxed to a linear programme.

:class:`~topoopt.placement.exact_mip.targets.LagrangianCounting` refutes a target pair
``(A, B)`` (Arnold eq. 2's spreads) when, for some multiplier ``lambda >= 0`` of the row
budget,

    rows * cols > lambda * rows * B + max { sum_j g_j(b_j) : sum_j b_j <= cols * A },

``g_j(b) = max(0, max_a min(f_j, a b) - lambda a)`` the most cells switch ``j`` adds when
``b`` columns touch it (``0 <= b <= cols``). It solves the knapsack exactly, one max-plus
step per switch: over the 500-1,000 racks of a 16,384-node tree that takes 1-2 s.

Here each ``g_j`` is replaced by its upper concave hull ``ĝ_j`` over ``b = 0 .. cols``
(``ĝ_j >= g_j``) and ``b_j`` may be fractional. The knapsack of concave functions is solved
greedily, by slopes: the hull of switch type ``f`` is a few linear pieces (slope, length),
``count`` switches of the type repeat each piece ``count`` times, and the best value for a
budget ``s`` is the sum of the steepest pieces that fit in ``s`` (the last one cut). This is
at least the integral knapsack's value (a relaxation of a maximisation), so a pair refuted
here is refuted by ``LagrangianCounting`` too, and every pair it refutes is infeasible: a
lower bound on the single-level optimum, computed per distinct free count (17 types on
racks of 16 nodes) in milliseconds whatever the number of switches. The rounding loss is at
most one switch's cells per piece boundary, small against ``rows * cols`` on large jobs.
"""

from __future__ import annotations

import itertools
from collections import Counter
from functools import cached_property

import numpy as np

from topoopt.placement.exact_mip.targets import LAGRANGE_STEPS, _gains
from topoopt.placement.instance import PlacementInstance


def upper_hull(values: np.ndarray) -> list[tuple[float, int]]:
    """The upper concave hull of the points ``(b, values[b])``, ``b = 0, 1, ...``, as
    ``(slope, length)`` pieces from ``b = 0``, slopes decreasing.

    Examples
    --------
    >>> upper_hull(np.array([0.0, 0.0, 3.0, 4.0]))
    [(1.5, 2), (1.0, 1)]
    """
    points: list[tuple[int, float]] = []
    for b, y in enumerate(values.tolist()):
        while len(points) >= 2:
            (b0, y0), (b1, y1) = points[-2], points[-1]
            if (y1 - y0) * (b - b0) > (y - y0) * (b1 - b0):
                break  # the middle point lies strictly above the chord: keep it
            points.pop()
        points.append((b, y))
    return [((y1 - y0) / (b1 - b0), b1 - b0) for (b0, y0), (b1, y1) in itertools.pairwise(points)]


class FractionalCounting:
    """The fractional relaxation of :class:`LagrangianCounting` (module docstring).

    Parameters
    ----------
    instance
        A single-level instance: its minipods are the switches, ``rows x cols`` the job.

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> pods = tuple(Minipod(f"m{j}", f) for j, f in enumerate((5, 2, 2)))
    >>> frac = FractionalCounting(PlacementInstance("x", pods, dp=4, tp=8, pp=2, alpha=0.5))
    >>> frac.allows(1, 2), frac.allows(3, 2)
    (False, True)
    """

    def __init__(self, instance: PlacementInstance) -> None:
        self.instance = instance

    @cached_property
    def pieces(self) -> list[tuple[float, np.ndarray, np.ndarray, np.ndarray]]:
        """Per multiplier ``lambda``: the pieces of every switch type, steepest first, as
        ``(lambda, slopes, ends, values)`` with ``ends`` / ``values`` the cumulative budget and
        value at the end of each piece."""
        inst = self.instance
        rows, cols = inst.rows, inst.cols
        lams = cols * np.arange(LAGRANGE_STEPS + 1) / LAGRANGE_STEPS
        types = sorted(Counter(f for f in inst.capacities if f > 0).items())
        gains = [(np.maximum(_gains(f, cols, rows, lams), 0.0), count) for f, count in types]
        out = []
        for i, lam in enumerate(lams):
            slopes: list[float] = []
            lengths: list[int] = []
            for gain, count in gains:
                for slope, length in upper_hull(np.concatenate(([0.0], gain[i]))):
                    if slope > 0:
                        slopes.append(slope)
                        lengths.append(length * count)
            order = np.argsort(slopes, kind="stable")[::-1]
            steep = np.asarray(slopes, dtype=float)[order]
            span = np.asarray(lengths, dtype=float)[order]
            out.append((float(lam), steep, np.cumsum(span), np.cumsum(steep * span)))
        return out

    def knapsack(self, budget: float, index: int) -> float:
        """The relaxed knapsack's value for ``sum_j b_j <= budget`` at the ``index``-th
        multiplier (at least the integral value)."""
        _, slope, ends, values = self.pieces[index]
        k = int(np.searchsorted(ends, budget, side="right"))
        if k >= len(ends):
            return float(values[-1]) if len(values) else 0.0
        before_end = ends[k - 1] if k else 0.0
        before_value = values[k - 1] if k else 0.0
        return float(before_value + slope[k] * (budget - before_end))

    def allows(self, max_dp_use: int, max_pp_use: int) -> bool:
        """Whether every multiplier admits the pair (``False`` proves it infeasible)."""
        inst = self.instance
        need = inst.n_nodes - 1e-9 * max(1, inst.n_nodes)
        budget = inst.cols * max_dp_use
        for index, (lam, *_) in enumerate(self.pieces):
            if lam * inst.rows * max_pp_use + self.knapsack(budget, index) < need:
                return False
        return True
