"""The min-plus convolution of two cost tables, as the dynamic programmes over sizes use it
(the partition family's profile bound over its tree of groups, ``placement/column_racks``'
least racks of a class's rows)."""

from __future__ import annotations

import numpy as np

WINDOW_CELLS = 1 << 20
"""Up to this many pairs ``(s, r)``, :func:`min_plus` takes all of them in one vector step;
beyond (the partition bounds' tables of thousands of sizes), one step per finite entry."""


def min_plus(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``out[s] = min_{r ≤ s} left[s − r] + right[r]`` for ``s < len(left)`` (``inf`` where
    no pair is finite): the least cost of a size ``s`` split into a part priced by ``left``
    and one priced by ``right``. All pairs at once up to :data:`WINDOW_CELLS` of them, else
    one vector step per finite entry of the table with fewer.

    Examples
    --------
    >>> min_plus(np.array([0.0, 1.0, np.inf]), np.array([5.0, 0.0]))
    array([5., 0., 1.])
    """
    n = len(left)
    if n * len(right) <= WINDOW_CELLS:
        padded = np.concatenate([np.full(len(right) - 1, np.inf), left])
        windows = np.lib.stride_tricks.sliding_window_view(padded, len(right))[:n]
        return np.asarray((windows + right[::-1]).min(axis=1), dtype=float)
    out = np.full(n, np.inf)
    finite_left = np.flatnonzero(np.isfinite(left))
    finite_right = np.flatnonzero(np.isfinite(right[:n]))
    if len(finite_right) <= len(finite_left):
        for r in finite_right.tolist():
            np.minimum(out[r:], left[: n - r] + right[r], out=out[r:])
    else:
        for t in finite_left.tolist():
            width = min(n - t, len(right))
            np.minimum(out[t : t + width], left[t] + right[:width], out=out[t : t + width])
    return out
