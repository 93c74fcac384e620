"""Bitmasks of local GPU indices: the representation every gpuselect solver works on.

A subset of one host's GPUs is an integer whose bit ``i`` is set when local GPU ``i`` is in
the subset; a subset of the cluster is one such mask per host (a row of a NumPy array for
vectorised evaluation). Hosts have at most :data:`MAX_GPUS_PER_HOST` GPUs.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator

import numpy as np

MAX_GPUS_PER_HOST = 16
"""Largest number of GPUs a host may have (masks index tables of ``2 ** gpus`` entries)."""

POPCOUNT = np.array([bin(m).count("1") for m in range(1 << MAX_GPUS_PER_HOST)], dtype=np.int64)
"""``POPCOUNT[mask]`` is the number of GPUs in ``mask`` (vectorised popcount)."""


def mask_of(indices: Iterable[int]) -> int:
    """The mask of a collection of local indices.

    Examples
    --------
    >>> mask_of([0, 1, 3])
    11
    """
    mask = 0
    for i in indices:
        mask |= 1 << int(i)
    return mask


def indices_of(mask: int) -> list[int]:
    """Local indices in ``mask``, increasing.

    Examples
    --------
    >>> indices_of(11)
    [0, 1, 3]
    """
    return [i for i in range(int(mask).bit_length()) if mask >> i & 1]


def popcount(mask: int) -> int:
    """Number of GPUs in ``mask``."""
    return int(mask).bit_count()


def submasks(mask: int, size: int | None = None) -> Iterator[int]:
    """Every sub-mask of ``mask`` (of ``size`` bits if given), in lexicographic index order.

    Examples
    --------
    >>> list(submasks(0b1011, 2))
    [3, 9, 10]
    """
    bits = indices_of(mask)
    sizes = range(len(bits) + 1) if size is None else (size,)
    for c in sizes:
        for combo in itertools.combinations(bits, c):
            yield mask_of(combo)


@functools.lru_cache(maxsize=4096)
def submask_array(mask: int, size: int) -> np.ndarray:
    """:func:`submasks` of ``size`` bits as a read-only ``int64`` array, computed once per
    ``(mask, size)`` (hosts with the same idle GPUs share it).

    Examples
    --------
    >>> submask_array(0b1011, 2).tolist()
    [3, 9, 10]
    """
    out = np.fromiter(submasks(mask, size), dtype=np.int64)
    out.setflags(write=False)
    return out


def format_mask(mask: int) -> str:
    """nccl-tests style name of a mask: concatenated indices, comma-separated past GPU 9.

    Examples
    --------
    >>> format_mask(0b1011), format_mask(mask_of([2, 11]))
    ('013', '2,11')
    """
    idx = indices_of(mask)
    if idx and idx[-1] >= 10:
        return ",".join(str(i) for i in idx)
    return "".join(str(i) for i in idx)


def parse_mask(text: str, gpus: int | None = None) -> int:
    """Parse ``"0123"`` (one digit per GPU) or ``"0,1,12"``; raise ``ValueError`` if malformed.

    ``gpus`` is the expected number of GPUs when known (the ``GPU_num`` column).

    Examples
    --------
    >>> parse_mask("0123", 4), parse_mask("3,12")
    (15, 4104)
    """
    text = text.strip()
    parts = text.split(",") if "," in text else list(text)
    if not parts or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"GPU list {text!r} is not digits (e.g. '0123' or '0,1,12')")
    idx = [int(p) for p in parts]
    if len(set(idx)) != len(idx):
        raise ValueError(f"GPU list {text!r} repeats a GPU")
    if any(i >= MAX_GPUS_PER_HOST for i in idx):
        raise ValueError(f"GPU list {text!r} names a GPU index >= {MAX_GPUS_PER_HOST}")
    if gpus is not None and len(idx) != gpus:
        raise ValueError(f"GPU list {text!r} has {len(idx)} GPUs but GPU_num says {gpus}")
    return mask_of(idx)
