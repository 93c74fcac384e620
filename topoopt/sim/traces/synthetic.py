"""Synthetic traces: Poisson arrivals, a size distribution and log-normal durations, with the
arrival rate set by a load factor.

The *offered load* of a trace on a cluster of ``G`` GPUs is the GPU-seconds its jobs ask for
per second of arrivals over ``G``: with arrival rate ``lambda`` and job size ``g`` and
duration ``d`` drawn independently, ``load = lambda * E[g] * E[d] / G``. :func:`synthetic`
draws sizes and durations first and then sets ``lambda = load * G / (E[g] * E[d])`` from
their distributions' means, so ``load = 1`` asks for the whole cluster on average.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from topoopt.core.errors import InvalidOptionError
from topoopt.core.seeding import make_rng
from topoopt.sim.jobs import Job
from topoopt.sim.traces._rows import Trace

PHILLY_SIZES = (1, 2, 4, 8, 16, 32, 64)
"""GPU counts of the default size distribution."""
PHILLY_WEIGHTS = (0.867, 0.023, 0.049, 0.051, 0.0076, 0.0019, 0.0004)
"""Their shares in the Philly-derived trace (rounded; 96,662 of 111,549 jobs ask for one GPU)."""


def synthetic(
    *,
    jobs: int,
    cluster_gpus: int,
    load: float = 0.8,
    seed: int = 0,
    sizes: Sequence[int] = PHILLY_SIZES,
    weights: Sequence[float] = PHILLY_WEIGHTS,
    median_duration_s: float = 3600.0,
    sigma: float = 1.5,
) -> Trace:
    """A synthetic trace (module docstring); deterministic given ``seed``.

    Parameters
    ----------
    jobs
        Number of jobs.
    cluster_gpus
        GPUs of the cluster the load refers to.
    load
        Offered load (> 0): 1 asks for every GPU on average.
    sizes, weights
        GPU counts and their probabilities (normalised).
    median_duration_s, sigma
        Log-normal durations: median and shape (``sigma`` of the logarithm).

    Examples
    --------
    >>> trace = synthetic(jobs=3, cluster_gpus=64, seed=1)
    >>> [job.id for job in trace.jobs], trace.jobs[0].submit_s
    (['j0', 'j1', 'j2'], 0.0)
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidOptionError(f"jobs: must be an integer >= 1, got {jobs!r}")
    if not (isinstance(load, (int, float)) and math.isfinite(load) and load > 0):
        raise InvalidOptionError(f"load: must be a number > 0, got {load!r}")
    if len(sizes) != len(weights) or not sizes or min(sizes) < 1 or min(weights) < 0:
        raise InvalidOptionError("sizes, weights: equal non-empty lists, sizes >= 1, weights >= 0")
    if not (median_duration_s > 0 and sigma >= 0):
        raise InvalidOptionError("median_duration_s must be > 0 and sigma >= 0")
    rng = make_rng(seed)
    total = float(sum(weights))
    if total <= 0:
        raise InvalidOptionError("weights: must not all be 0")
    probs = [w / total for w in weights]
    drawn_sizes = rng.choice(list(sizes), size=jobs, p=probs)
    durations = median_duration_s * rng.lognormal(0.0, sigma, size=jobs)
    mean_size = sum(s * p for s, p in zip(sizes, probs, strict=True))
    mean_duration = median_duration_s * math.exp(sigma**2 / 2)
    rate = load * cluster_gpus / (mean_size * mean_duration)
    gaps = rng.exponential(1 / rate, size=jobs)
    gaps[0] = 0.0
    submits = gaps.cumsum()
    return Trace(
        [
            Job(f"j{i}", float(submits[i]), int(drawn_sizes[i]), float(round(durations[i], 3)))
            for i in range(jobs)
        ]
    )
