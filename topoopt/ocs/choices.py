"""A job's routing choice: its PS server pod, its ring order, or nothing (A2A).

A *choice* is a pod number (PS server), a tuple of pod numbers (RAR ring order) or ``None``
(A2A, whose traffic is fixed by its GPUs). :func:`options` lists a job's admissible choices:
the instance's fixed one, or every one when the instance leaves it free (every pod of the job
for a server; every distinct ring, :func:`rings`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from topoopt.ocs.traffic import Demand, job_demand

if TYPE_CHECKING:
    from topoopt.ocs.instance import OcsInstance

Choice = int | tuple[int, ...] | None
"""A PS server pod, a RAR ring order (pod numbers) or ``None`` (A2A)."""


def rings(pods: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every distinct ring over ``pods``: the ``(k - 1)! / 2`` Hamiltonian cycles for ``k >= 3``
    (first pod fixed, one direction), the pods themselves for ``k <= 2``.

    Circuits are half-duplex, so a ring and its reverse load every pair alike.

    Examples
    --------
    >>> list(rings([5, 6, 7, 8]))
    [(5, 6, 7, 8), (5, 6, 8, 7), (5, 7, 6, 8)]
    """
    if len(pods) <= 3:
        yield tuple(pods)
        return
    first, rest = pods[0], pods[1:]
    for order in itertools.permutations(rest):
        if order[0] < order[-1]:
            yield (first, *order)


def ring_count(k: int) -> int:
    """How many distinct rings :func:`rings` yields over ``k`` pods."""
    return 1 if k <= 3 else math.factorial(k - 1) // 2


def canonical_ring(order: Sequence[int]) -> tuple[int, ...]:
    """The ring ``order`` up to rotation and reversal, as one representative: starting at its
    smallest pod, in the direction of the smaller neighbour.

    Examples
    --------
    >>> canonical_ring([3, 1, 2, 0]), canonical_ring([0, 2, 1, 3])
    ((0, 2, 1, 3), (0, 2, 1, 3))
    """
    k = len(order)
    if k <= 2:
        return tuple(sorted(order))
    start = order.index(min(order))
    forward = tuple(order[(start + t) % k] for t in range(k))
    backward = tuple(order[(start - t) % k] for t in range(k))
    return min(forward, backward)


def fixed_choice(instance: OcsInstance, job: int) -> Choice:
    """The instance's own choice for ``job`` (``None`` when free or for A2A)."""
    spec = instance.jobs[job]
    if spec.type == "PS" and spec.server_pod is not None:
        return instance.pod_index[spec.server_pod]
    if spec.type == "RAR" and spec.ring is not None:
        return tuple(instance.pod_index[p] for p in spec.ring)
    if spec.type == "RAR" and len(spec.pods) <= 3:
        return instance.job_pods(job)  # one ring only
    return None


def is_free(instance: OcsInstance, job: int) -> bool:
    """Whether the solvers choose ``job``'s server or ring (more than one option)."""
    spec = instance.jobs[job]
    if spec.type == "PS":
        return spec.server_pod is None
    if spec.type == "RAR":
        return spec.ring is None and len(spec.pods) > 3
    return False


def options(instance: OcsInstance, job: int) -> list[Choice]:
    """Every admissible choice of ``job`` (module docstring).

    Examples
    --------
    >>> from topoopt.ocs.generate import worked
    >>> inst = worked()
    >>> [options(inst, j) for j in range(inst.n_jobs)]
    [[(0, 1, 2)], [1, 2], [None]]
    """
    spec = instance.jobs[job]
    if not is_free(instance, job):
        fixed = fixed_choice(instance, job)
        return [fixed] if spec.type != "A2A" else [None]
    pods = instance.job_pods(job)
    if spec.type == "PS":
        return list(pods)
    return list(rings(pods))


def option_count(instance: OcsInstance, job: int) -> int:
    """``len(options(instance, job))`` without listing them."""
    if not is_free(instance, job):
        return 1
    k = len(instance.jobs[job].pods)
    return k if instance.jobs[job].type == "PS" else ring_count(k)


def default_choice(instance: OcsInstance, job: int) -> Choice:
    """The instance's fixed choice of ``job``, else its first pod as server and its pods' order
    as ring."""
    spec = instance.jobs[job]
    fixed = fixed_choice(instance, job)
    if fixed is None and spec.type == "PS":
        return instance.job_pods(job)[0]
    if fixed is None and spec.type == "RAR":
        return instance.job_pods(job)
    return fixed


def default_choices(instance: OcsInstance) -> dict[int, Choice]:
    """:func:`default_choice` of every job (what the generators check the no-TDM round with)."""
    return {j: default_choice(instance, j) for j in range(instance.n_jobs)}


def demand(instance: OcsInstance, job: int, choice: Choice) -> Demand:
    """``job``'s bytes in one communication phase with ``choice``
    (:func:`topoopt.ocs.traffic.job_demand`)."""
    spec = instance.jobs[job]
    gpus = [(instance.pod_index[p], g) for p, g in spec.gpus]
    if spec.type == "PS":
        if not isinstance(choice, int):
            raise ValueError(f"job {spec.name!r}: a PS choice is a server pod, got {choice!r}")
        return job_demand(instance.n_pods, "PS", gpus, spec.traffic_bytes, server=choice)
    if spec.type == "RAR":
        if not isinstance(choice, tuple):
            raise ValueError(f"job {spec.name!r}: a RAR choice is a ring, got {choice!r}")
        return job_demand(instance.n_pods, "RAR", gpus, spec.traffic_bytes, ring=choice)
    return job_demand(instance.n_pods, "A2A", gpus, spec.traffic_bytes)


__all__ = [
    "Choice",
    "canonical_ring",
    "default_choice",
    "default_choices",
    "demand",
    "fixed_choice",
    "is_free",
    "option_count",
    "options",
    "ring_count",
    "rings",
]
