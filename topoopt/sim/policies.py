"""Queue policies and job-completion-time predictors of the simulator.

A :class:`QueuePolicy` orders the waiting jobs and says whether later jobs may *backfill*
(``docs/sim.md``, "Policies"):

* ``fifo``, ``priority``, ``spf``: the queue in submit order; by priority (larger first), then
  submit order; shortest predicted running time first. The first job that does not fit blocks
  every job behind it.
* ``fifo-backfill``, ``priority-backfill``, ``spf-backfill``: the same orders with EASY
  backfilling: the first job that does not fit gets a reservation at its *shadow time*, the
  earliest time the predicted ends of the running jobs free enough GPUs for it; a job behind
  it starts now only if it fits and its predicted end is no later than the shadow time, so it
  cannot delay the reserved job (by the predictions). This is EASY without its "extra nodes"
  clause (a job that would end later but leave the reserved nodes alone), the conservative
  form.
* ``first-fit``: submit order, but a job that does not fit does not block the others: every
  job that fits starts. ``arnold``: the same in Arnold's order (priority, then submit time;
  Algorithm 1 pops the whole queue each interval); with a reservation
  (:mod:`topoopt.sim.reservation`) it is Arnold's queue policy.

A predictor gives the running time the policies plan with (the shadow time of backfilling,
``spf``'s order, Arnold's reservation): ``exact`` (the trace's reference duration, an oracle),
``noisy`` (that times a log-normal factor with ``sigma = 0.5``, drawn once per job from the
run's seed), ``none`` (no prediction: every running time is unknown, ``math.inf``), or a
learned model (:class:`topoopt.learn.jct.JctPredictor`, ``topoopt simulate --jct-model``).
Policies and predictors are plug-ins: :data:`QUEUE_POLICIES` (entry-point group
``topoopt.sim.policies``) and :data:`PREDICTORS` (``topoopt.sim.predictors``).

Under ``none`` a reservation's ``predicted`` mode lets no job into the zone (none is known to
end in time: the ``strict`` behaviour) and its plan counts only idle nodes as free by the
arrival, the others in node order; ``spf`` keeps submit order; backfilling needs predictions
and is refused.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from topoopt.sim.jobs import Job
from topoopt.sim.registry import Registry


class Predictor(Protocol):
    """Predicted running time of a job under the reference placement.

    A predictor may also have a ``name`` (recorded with each job; default: its registry name
    or its type's) and ``batch(jobs, seed) -> list of seconds`` giving the same values for a
    whole trace at once (the simulator calls it when present, as a learned model evaluates
    its trees faster on many rows).
    """

    def __call__(self, job: Job, seed: int) -> float:
        """Seconds (``>= 0``; ``math.inf``: unknown)."""
        ...


def exact_predictor(job: Job, seed: int) -> float:
    """The trace's reference duration."""
    return job.duration_s


def no_predictor(job: Job, seed: int) -> float:
    """No prediction: the running time is unknown (``math.inf``)."""
    return math.inf


@dataclass(frozen=True)
class NoisyPredictor:
    """The reference duration times ``exp(sigma * z)``, ``z`` standard normal drawn from the
    job id and the seed (the same job gets the same prediction whenever it is asked)."""

    sigma: float = 0.5

    def __call__(self, job: Job, seed: int) -> float:
        """Seconds."""
        digest = hashlib.blake2b(f"{seed}/{job.id}".encode(), digest_size=16).digest()
        u1 = (int.from_bytes(digest[:8], "big") + 1) / (2**64 + 1)
        u2 = int.from_bytes(digest[8:], "big") / 2**64
        z = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)  # Box-Muller
        return job.duration_s * math.exp(self.sigma * z)


@dataclass(frozen=True)
class QueuePolicy:
    """A queue order and whether later jobs backfill.

    Attributes
    ----------
    name
        The policy's name.
    key
        ``key(job, predicted_s, arrival)``: the sort key of a waiting job (smallest first);
        ``arrival`` counts jobs in the order they arrived.
    backfill
        EASY backfilling behind the first job that does not fit.
    blocking
        Whether the first job that does not fit stops the pass (``False``: every job that
        fits starts, in order, as Arnold's Algorithm 1 pops the whole queue).
    """

    name: str
    key: Callable[[Job, float, int], tuple[float, ...]]
    backfill: bool = False
    blocking: bool = True


def _fifo(job: Job, predicted: float, arrival: int) -> tuple[float, ...]:
    return (job.submit_s, arrival)


def _priority(job: Job, predicted: float, arrival: int) -> tuple[float, ...]:
    return (-job.priority, job.submit_s, arrival)


def _spf(job: Job, predicted: float, arrival: int) -> tuple[float, ...]:
    return (predicted, job.submit_s, arrival)


QUEUE_POLICIES: Registry[QueuePolicy] = Registry("queue policy", "topoopt.sim.policies", ())
for _name, _key in (("fifo", _fifo), ("priority", _priority), ("spf", _spf)):
    QUEUE_POLICIES.register(_name, QueuePolicy(_name, _key))
    QUEUE_POLICIES.register(f"{_name}-backfill", QueuePolicy(f"{_name}-backfill", _key, True))
QUEUE_POLICIES.register("first-fit", QueuePolicy("first-fit", _fifo, blocking=False))
QUEUE_POLICIES.register("arnold", QueuePolicy("arnold", _priority, blocking=False))

PREDICTORS: Registry[Predictor] = Registry("predictor", "topoopt.sim.predictors", ())
PREDICTORS.register("exact", exact_predictor)
PREDICTORS.register("noisy", NoisyPredictor())
PREDICTORS.register("none", no_predictor)
