"""Seed handling: one place turns a user seed into a random generator."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

DEFAULT_SEED = 0
"""Seed used when the caller gives none, so that runs are reproducible by default."""


def normalize_seed(seed: int | None) -> int:
    """Return the effective seed: ``seed`` itself, or :data:`DEFAULT_SEED` for ``None``.

    Examples
    --------
    >>> normalize_seed(None), normalize_seed(7)
    (0, 7)
    """
    if seed is None:
        return DEFAULT_SEED
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        from topoopt.core.errors import InvalidOptionError

        raise InvalidOptionError(f"seed: must be a non-negative integer, got {seed!r}")
    return int(seed)


def make_rng(seed: int | None) -> np.random.Generator:
    """A NumPy generator seeded with :func:`normalize_seed` of ``seed``."""
    import numpy as np

    return np.random.default_rng(normalize_seed(seed))
