"""Bands of lines cut into strips, each strip whole on one minipod, chosen exactly.

The guillotine construction (:func:`~topoopt.placement.exact_mip.targets.guillotine`) cuts
``length`` lines of ``width`` cells into at most ``G`` bands of lines, each band into at
most ``S`` strips of its width, every strip whole in one minipod; a line then touches at most
``S`` minipods (one per strip of its band) and a position of the width at most ``G`` (one
per band). It sizes the bands and strips greedily. Here the same shape is an integer
programme, so the bands and the minipods of their strips are chosen together (measured on
the benchmark's 16 x 8 job: the greedy cut fails on a group of 16 racks where four bands of
two columns on racks of ``(14, 10, 8)``, ``(14, 10, 8)``, ``(13, 12, 8)`` and ``(12, 12,
9)`` free nodes exist). With ``G' = min(G, length)`` bands ``g`` (more, thinner bands never
hurt: a strip of a band cut in two stays whole on its minipod), sizes ``s``, minipods ``j``
of ``f_j`` free nodes::

    b[g, s] in {0, 1}, sum_s b[g, s] = 1            (band g has s lines)
    sum_{g, s} s b[g, s] = length,  size(g) >= size(g + 1)
    y[j, g, s] in {0, ..., c[j, s]},  c[j, s] = min(width, f_j // s)
    y[j, g, s] <= c[j, s] b[g, s],  y[j, g, s] <= c[j, s] u[j, g],  u[j, g] in {0, 1}
    sum_{j, s} y[j, g, s] = width,  sum_j u[j, g] <= S       (every band: its strips)
    sum_{g, s} s y[j, g, s] <= f_j                            (every minipod)

``y[j, g, s]`` positions of band ``g``'s width lie on minipod ``j``: a strip of ``s x
y`` cells. Every solution is such a cut (:func:`cut` lays it out), and every such cut is a
solution, so with every size ``s`` and every minipod allowed the programme is exact *for
the shape* (a test checks it against brute force); :func:`cut` allows the sizes within
:data:`SIZE_SLACK` of even and the largest minipods only (:data:`MAX_MINIPODS_PER_STRIP`),
and as a construction of a target pair it proves nothing when it fails.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from topoopt.placement.exact_mip._milp import SparseMilp

SIZE_SLACK = 1
"""A band has between ``length // G' - SIZE_SLACK`` and ``ceil(length / G') + SIZE_SLACK``
lines (the programme grows with the sizes allowed)."""

MAX_MINIPODS_PER_STRIP = 2
"""Only the ``G' * S * MAX_MINIPODS_PER_STRIP`` largest minipods take part (the programme
grows with the minipods; a cut uses at most ``G' * S``)."""

BANDS_SECONDS = 0.5
"""The most one programme of :func:`realise` may take (a cut it finds took 0.02-0.3 s on
the benchmark's groups of 16 racks; refuting one takes seconds and proves nothing)."""


def cut(
    caps: Sequence[int], length: int, width: int, groups: int, strips: int, time_limit: float
) -> list[list[int]] | None:
    """A ``length x width`` matrix of minipod indices (into ``caps``): at most ``groups``
    bands of lines, each band's width in at most ``strips`` strips whole on one minipod
    (module docstring); ``None`` when none was found within ``time_limit`` seconds.

    Examples
    --------
    >>> m = cut([14, 14, 13, 12, 12, 12, 11, 11, 9, 9, 9, 8, 8, 8, 6, 4], 8, 16, 4, 3, 10)
    >>> len(m), len(m[0]), max(len(set(line)) for line in m)  # each column on <= 3 racks
    (8, 16, 3)
    >>> max(len({m[i][w] for i in range(8)}) for w in range(16))  # each row on <= 4 racks
    4
    """
    bands = min(groups, length)
    if bands < 1 or strips < 1 or sum(caps) < length * width:
        return None
    keep = bands * strips * MAX_MINIPODS_PER_STRIP
    pods = sorted(range(len(caps)), key=lambda j: (-caps[j], j))[:keep]
    pods = [j for j in pods if caps[j] > 0]
    even = length // bands
    sizes = range(max(1, even - SIZE_SLACK), min(length - bands + 1, even + 1 + SIZE_SLACK) + 1)
    started = time.perf_counter()
    found = _whole_minipods(caps, pods, length, width, bands, strips, sizes, time_limit)
    if found is not None:
        return found
    time_limit -= time.perf_counter() - started
    if time_limit <= 0:
        return None
    return _any_minipods(caps, pods, length, width, bands, strips, sizes, time_limit)


def _band_sizes(
    milp: SparseMilp, bands: int, sizes: range, length: int
) -> dict[tuple[int, int], int]:
    """The columns ``b[g, s]`` (band ``g`` has ``s`` lines) and their rows: one size per
    band, sizes non-increasing, ``length`` lines in all."""
    b = {(g, s): milp.var(0, 1, integer=True) for g in range(bands) for s in sizes}
    for g in range(bands):
        milp.row({b[g, s]: 1 for s in sizes}, 1, 1)
        if g + 1 < bands:
            milp.row({b[g, s]: s for s in sizes} | {b[g + 1, s]: -s for s in sizes}, lower=0)
    milp.row({b[g, s]: s for g in range(bands) for s in sizes}, length, length)
    return b


def _size(values: Sequence[float], b: dict[tuple[int, int], int], g: int, sizes: range) -> int:
    """Band ``g``'s size in a solution."""
    return next(s for s in sizes if values[b[g, s]] > 0.5)


def _any_minipods(
    caps: Sequence[int],
    pods: Sequence[int],
    length: int,
    width: int,
    bands: int,
    strips: int,
    sizes: range,
    time_limit: float,
) -> list[list[int]] | None:
    """The programme of the module docstring over the minipods ``pods`` (a minipod may hold
    strips of several bands)."""
    milp = SparseMilp()
    b = _band_sizes(milp, bands, sizes, length)
    u = {(j, g): milp.var(0, 1, integer=True) for j in pods for g in range(bands)}
    room = {(j, s): min(width, caps[j] // s) for j in pods for s in sizes}
    y = {
        (j, g, s): milp.var(0, room[j, s], integer=True)
        for j in pods
        for g in range(bands)
        for s in sizes
        if room[j, s] > 0
    }
    for g in range(bands):
        milp.row({y[key]: 1 for key in y if key[1] == g}, width, width)
        milp.row({u[j, g]: 1 for j in pods}, upper=strips)
    for (j, g, s), col in y.items():
        milp.row({col: 1, b[g, s]: -room[j, s]}, upper=0)
        milp.row({col: 1, u[j, g]: -room[j, s]}, upper=0)
    for j in pods:
        milp.row({col: s for (jj, _, s), col in y.items() if jj == j}, upper=caps[j])
    status, values = milp.solve(time_limit)
    if status != "feasible":
        return None
    matrix: list[list[int]] = []
    for g in range(bands):
        line = [j for (j, gg, s), col in y.items() if gg == g for _ in range(round(values[col]))]
        assert len(line) == width
        matrix.extend([list(line) for _ in range(_size(values, b, g, sizes))])
    return matrix


def realise(
    caps: Sequence[int], rows: int, cols: int, a: int, b: int, seconds: float
) -> list[list[int]] | None:
    """A ``rows x cols`` matrix of minipod indices with every column on at most ``a``
    minipods and every row on at most ``b``, as bands of columns (at most ``b``, cut into at
    most ``a`` strips of rows) or bands of rows (at most ``a``, cut into at most ``b``
    strips), each programme within ``min(seconds / 2, BANDS_SECONDS)``; or ``None``.

    Examples
    --------
    >>> m = realise([4, 4, 4], 2, 6, 2, 2, 5)
    >>> max(len(set(r)) for r in m), max(len({r[c] for r in m}) for c in range(6))
    (2, 2)
    """
    limit = min(seconds / 2, BANDS_SECONDS)
    if limit <= 0:
        return None
    by_columns = cut(caps, cols, rows, b, a, limit)
    if by_columns is not None:
        return [list(row) for row in zip(*by_columns, strict=True)]
    return cut(caps, rows, cols, a, b, limit)


def _whole_minipods(
    caps: Sequence[int],
    pods: Sequence[int],
    length: int,
    width: int,
    bands: int,
    strips: int,
    sizes: range,
    time_limit: float,
) -> list[list[int]] | None:
    """The cut with every minipod in at most one band, minipods of equal free nodes counted
    together (``n[f, g, s]`` minipods of ``f`` free nodes in band ``g`` of size ``s``, each
    holding ``min(width, f // s)`` positions): a restriction of :func:`cut`'s programme
    without the symmetry between equal minipods, tried first (on the benchmark's group of
    16 racks it found the cut in 0.03 s where the full programme took 0.39 s)."""
    classes = sorted(Counter(caps[j] for j in pods).items(), reverse=True)
    milp = SparseMilp()
    b = _band_sizes(milp, bands, sizes, length)
    n = {
        (i, g, s): milp.var(0, min(count, strips), integer=True)
        for i, (free, count) in enumerate(classes)
        for g in range(bands)
        for s in sizes
        if free // s > 0
    }
    for g in range(bands):
        milp.row({col: 1 for (_, gg, _), col in n.items() if gg == g}, upper=strips)
        held = {col: min(width, classes[i][0] // s) for (i, gg, s), col in n.items() if gg == g}
        milp.row(held, lower=width)
    for (i, g, s), col in n.items():
        milp.row({col: 1, b[g, s]: -min(classes[i][1], strips)}, upper=0)
    for i, (_, count) in enumerate(classes):
        milp.row({col: 1 for (ii, _, _), col in n.items() if ii == i}, upper=count)
    status, values = milp.solve(time_limit)
    if status != "feasible":
        return None
    pool = {free: [j for j in pods if caps[j] == free] for free, _ in classes}
    matrix: list[list[int]] = []
    for g in range(bands):
        size = _size(values, b, g, sizes)
        line: list[int] = []
        for (i, gg, s), col in n.items():
            if gg != g or s != size:
                continue
            free = classes[i][0]
            for _ in range(round(values[col])):
                j = pool[free].pop()
                line += [j] * min(free // size, width - len(line))
        assert len(line) == width
        matrix.extend([list(line) for _ in range(size)])
    return matrix
