r"""The projected eigenvalue bound on the eq. 9 cut ((B5) of ``docs/partition.md``).

With (B0), ``cut(π) = Σ_j δ_j · ½ Σ_{G ∈ P_j} x_Gᵀ L x_G`` for the traffic Laplacian ``L`` and
the indicator ``x_G`` of the vertices placed in ``G``. Summing over the levels, with ``x_a`` the
indicator of cluster ``a`` and ``u(a, b) = Σ_{j: a, b in one group of P_j} δ_j`` (the
*similarity* of the widest-path ultrametric: the steps of the levels where ``a`` and ``b``
meet),

.. math::

    \mathrm{cut}(π) = \tfrac12 \operatorname{tr}(X^\top L X U)
        = \tfrac12 \operatorname{tr}(M \, Y U Y^\top),
    \qquad Y = W^{1/2} X, \quad M = W^{-1/2} L W^{-1/2},

``W = diag(g)``. ``Y``'s columns are orthogonal with ``YᵀY = diag(m)`` (``m_a`` the GPUs
placed in ``a``), ``Y 1 = √g`` and ``Yᵀ √g = m``; ``M √g = 0``. Writing ``Y = √g mᵀ / n + V Z``
with ``V`` an orthonormal basis of ``√g``'s complement (Hadley, Rendl and Wolkowicz's
projection), ``ZᵀZ = diag(m) − m mᵀ / n =: A(m)`` and ``cut(π) = ½ tr(VᵀMV · Z U Zᵀ)``. By
von Neumann's trace inequality (``tr(PQ) ≥ Σ_i λ_i↑(P) λ_i↓(Q)`` for symmetric ``P`` and
positive semidefinite ``Q``), since ``Z U Zᵀ`` has the nonzero eigenvalues ``μ(m)`` of
``U^{1/2} A(m) U^{1/2}``,

.. math::

    \mathrm{cut}(π) \ge \tfrac12 \sum_{i=1}^{k} λ_{i+1}(M)\, μ_i(m),

``λ`` ascending (``λ_1 = 0`` belongs to ``√g``; with ``|V| − 1 < k`` the last one repeated:
an assignment's ``μ`` has at most ``|V| − 1`` nonzero entries), ``μ`` descending. The
right-hand side is concave in ``m`` (``A`` is concave in the Loewner order, and with ascending
weights ``λ ≥ 0`` the sum is the least of ``Σ_i λ_i q_iᵀ B q_i`` over orthonormal frames:
concave and monotone in ``B``), so its least
value over the feasible sizes ``{Σ_a m_a = n, 0 ≤ m_a ≤ K_a}`` is at a vertex: some clusters
full, one partly filled, the rest empty (:func:`size_vertices`). With many clusters
(:data:`MAX_JOINT_CLUSTERS`) the bound is taken level by level instead (``U`` restricted to one
level is ``δ_j`` times its groups' blocks; each level's function is symmetric and concave in its
group sizes, so least at the sizes that fill the largest groups first, which majorise all
others), a weaker but valid bound. One dense eigendecomposition of ``M``: 5 ms at 128
vertices, 20-40 ms at 512 (``benchmarks/partition/eigenvalue_bound.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from topoopt.partition.formulations.cut_mip import level_steps
from topoopt.partition.instance import PartitionInstance

MAX_VERTICES = 4096
"""Largest job for the dense eigendecomposition (``O(|V|³)`` time, ``O(|V|²)`` memory)."""
MAX_JOINT_CLUSTERS = 12
"""Most clusters for the joint bound over all levels (its size vertices number up to
``k · 2^(k−1)``); above it the bound is taken level by level."""
ROUNDING = 1e-12
"""Relative error allowed per eigenvalue (per dimension), taken off the bound: LAPACK's
eigenvalues are exact for a matrix within ``p(n) · eps · ‖M‖`` of the input."""


def similarity(instance: PartitionInstance) -> np.ndarray:
    """``u(a, b)``: the sum of the level steps ``δ_j`` over the levels where clusters ``a`` and
    ``b`` are in one group (``u(a, a)`` the sum of all steps).

    Examples
    --------
    >>> inst = PartitionInstance(
    ...     "t", [("a", 1), ("b", 1), ("c", 2)], [("a", "b", 100.0), ("b", "c", 10.0)],
    ...     [("u", 1), ("v", 1)], [("u", "v", 1.0)])
    >>> similarity(inst).round(3)
    array([[0.1 , 0.09, 0.  ],
           [0.09, 0.1 , 0.  ],
           [0.  , 0.  , 0.1 ]])
    """
    steps = level_steps(instance.graph.levels)
    k = instance.n_clusters
    out = np.zeros((k, k))
    for step, part in zip(steps, instance.graph.hierarchy, strict=False):
        for group in part:
            members = sorted(group)
            out[np.ix_(members, members)] += step
    return out


def spectrum(instance: PartitionInstance) -> np.ndarray:
    """The eigenvalues of ``M = W^{-1/2} L W^{-1/2}``, ascending, over the vertices with GPUs
    (a vertex without GPUs goes anywhere for free; leaving it and its edges out can only
    lower the cut, so the bound stays valid)."""
    u, w, traffic = instance.edge_arrays
    gpus = np.array([v.gpus for v in instance.vertices], dtype=float)
    keep = np.flatnonzero(gpus > 0)
    index = np.full(len(gpus), -1)
    index[keep] = np.arange(len(keep))
    inside = (gpus[u] > 0) & (gpus[w] > 0)
    adjacency = sp.coo_matrix(
        (traffic[inside], (index[u[inside]], index[w[inside]])), shape=(len(keep), len(keep))
    )
    laplacian = csgraph.laplacian((adjacency + adjacency.T).toarray())
    scale = 1.0 / np.sqrt(gpus[keep])
    return np.linalg.eigvalsh(scale[:, None] * laplacian * scale[None, :])


def size_vertices(capacity: Sequence[float], need: float) -> Iterator[np.ndarray]:
    """The vertices of ``{m : Σ m = need, 0 ≤ m ≤ capacity}``: a set of full entries, one
    entry taking the rest, the others 0 (a vertex may come more than once).

    Examples
    --------
    >>> sorted(tuple(m.tolist()) for m in size_vertices([2, 3], 4))
    [(1.0, 3.0), (2.0, 2.0)]
    """
    k = len(capacity)
    for rest in range(k):
        others = [a for a in range(k) if a != rest]
        for count in range(k):
            for full in itertools.combinations(others, count):
                left = need - sum(capacity[a] for a in full)
                if 0 <= left <= capacity[rest]:
                    sizes = np.zeros(k)
                    sizes[list(full)] = [capacity[a] for a in full]
                    sizes[rest] = left
                    yield sizes


def weighted_sum(spectrum_m: np.ndarray, similarity_root: np.ndarray, sizes: np.ndarray) -> float:
    """``½ Σ_i λ_{i+1}(M) μ_i(m)`` less its rounding margin, for the sizes ``sizes``
    (``similarity_root`` = ``U^{1/2}``; ``spectrum_m`` ascending). With fewer eigenvalues
    than clusters (``|V| − 1 < k``) the last is repeated: an assignment's ``Z U Zᵀ`` has at
    most ``|V| − 1`` nonzero eigenvalues, so the value there is unchanged, and the weights stay
    ascending, which keeps the function concave in ``m``."""
    need = float(sizes.sum())
    gram = np.diag(sizes) - np.outer(sizes, sizes) / need
    mu = np.maximum(np.linalg.eigvalsh(similarity_root @ gram @ similarity_root)[::-1], 0.0)
    lam = np.maximum(spectrum_m[1 : 1 + len(mu)], 0.0)  # M is positive semidefinite
    lam = np.concatenate([lam, np.full(len(mu) - len(lam), lam[-1])])
    value = 0.5 * float(lam @ mu)
    margin = ROUNDING * (
        len(spectrum_m) * float(np.abs(spectrum_m).max()) * mu.sum()
        + len(mu) * float(mu.max(initial=0.0)) * lam.sum()
    )
    return value - margin


def eigenvalue_bound(instance: PartitionInstance) -> float:
    """The projected eigenvalue bound (module docstring): jointly over the levels, at the
    least size vertex, with at most :data:`MAX_JOINT_CLUSTERS` clusters, else level by level
    at the sizes that fill the largest groups first; 0 above :data:`MAX_VERTICES` vertices.

    Examples
    --------
    >>> inst = PartitionInstance(   # two triangles joined by one edge, two clusters of 3
    ...     "t", [("a", 3), ("b", 3)], [("a", "b", 1.0)],
    ...     [(x, 1) for x in "uvwxyz"],
    ...     [("u", "v", 1.0), ("v", "w", 1.0), ("u", "w", 1.0), ("x", "y", 1.0),
    ...      ("y", "z", 1.0), ("x", "z", 1.0), ("w", "x", 1.0)])
    >>> round(eigenvalue_bound(inst), 4)   # the optimum cuts w-x: 1.0
    0.6577
    """
    if instance.n_vertices > MAX_VERTICES:
        return 0.0
    lam = spectrum(instance)
    need = float(instance.total_gpus)
    if len(lam) <= 1 or need <= 0:
        return 0.0
    capacity = [float(c.capacity_gpus) for c in instance.clusters]
    if instance.n_clusters <= MAX_JOINT_CLUSTERS:
        root = _psd_root(similarity(instance))
        values = (weighted_sum(lam, root, m) for m in size_vertices(capacity, need))
        return max(0.0, float(min(values, default=0.0)))
    steps = level_steps(instance.graph.levels)
    return max(0.0, float(steps @ _level_values(instance, lam)))


def level_bounds(instance: PartitionInstance) -> np.ndarray:
    """Per level ``j`` of the ultrametric (those with a step), a lower bound on
    ``T_j(π) = ½ Σ_{G ∈ P_j} δ(S_G)`` of every assignment: the projected eigenvalue bound of
    that level alone (``U`` the identity over its groups), least at the sizes that fill the
    largest groups first. Zeros above :data:`MAX_VERTICES` vertices.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> level_bounds(examples()[4]).round(4).tolist()  # two levels
    [4.366, 1.7292]
    """
    count = len(level_steps(instance.graph.levels))
    if instance.n_vertices > MAX_VERTICES or instance.total_gpus <= 0:
        return np.zeros(count)
    lam = spectrum(instance)
    if len(lam) <= 1:
        return np.zeros(count)
    return _level_values(instance, lam)


def _level_values(instance: PartitionInstance, lam: np.ndarray) -> np.ndarray:
    """:func:`level_bounds` from the spectrum ``lam`` of ``M``."""
    need = float(instance.total_gpus)
    values = []
    for groups in level_capacities(instance):
        sizes = fill_largest(need, groups)
        values.append(max(0.0, weighted_sum(lam, np.eye(len(sizes)), sizes)))
    return np.array(values)


def level_capacities(instance: PartitionInstance) -> list[list[int]]:
    """The GPU capacity of every group, per level of the ultrametric that has a step.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> level_capacities(examples()[4])
    [[2, 2, 2, 2], [4, 2, 2]]
    """
    capacity = [c.capacity_gpus for c in instance.clusters]
    count = len(level_steps(instance.graph.levels))
    return [
        [sum(capacity[c] for c in group) for group in part]
        for part in instance.graph.hierarchy[:count]
    ]


def fill_largest(need: float, capacities: Sequence[float]) -> np.ndarray:
    """Group sizes ``0 ≤ s_G ≤ K_G`` adding up to ``need`` (as far as they can), the largest
    groups filled first, largest first: the size vector that majorises every other feasible
    one, where a Schur-concave function is least and a Schur-convex one largest.

    Examples
    --------
    >>> fill_largest(10, [4, 8, 2]).tolist()
    [8.0, 2.0, 0.0]
    """
    ordered = sorted((float(c) for c in capacities), reverse=True)
    return np.diff(np.minimum(np.cumsum([0.0, *ordered]), float(need)))


def _psd_root(matrix: np.ndarray) -> np.ndarray:
    """The square root of a positive semidefinite matrix (negative rounding clipped)."""
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * np.sqrt(np.maximum(values, 0.0))) @ vectors.T


__all__ = [
    "eigenvalue_bound",
    "fill_largest",
    "level_bounds",
    "level_capacities",
    "similarity",
    "size_vertices",
    "spectrum",
]
