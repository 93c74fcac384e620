"""Slow instances: where a solver needs far longer than :data:`TIME_LIMIT_S`, so that the time
limit, not the instance, ends the run (issue #14: every solver returns within ``time_limit +
1 s + 5 %`` wall time with its best incumbent).

Each family declares its own (:attr:`topoopt.core.family.Family.slow_examples`), so that a
plug-in family adds them without touching topoopt. :func:`measure` times one solve around
:func:`topoopt.solve` (what a caller waits, not the result's ``total_s``), and
``python -m topoopt.testing.slow`` prints the table of ``docs/performance.md``.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import topoopt
from topoopt.core.backends import DEFAULT_BACKEND
from topoopt.core.family import Instance
from topoopt.core.registry import get_family, solver_class, solver_names

TIME_LIMIT_S = 1.0
"""The limit the slow instances are solved with."""
GRACE_S = 1.0
"""Fixed allowance over the limit (returning the incumbent, checking it, process noise)."""
GRACE_SHARE = 0.05
"""Allowance proportional to the limit."""


def allowed_s(time_limit: float) -> float:
    """The longest wall time a solve with ``time_limit`` may take: ``limit · 1.05 + 1 s``."""
    return time_limit * (1 + GRACE_SHARE) + GRACE_S


_CACHE: dict[str, list[Instance[Any]]] = {}


def slow_examples(family: str) -> list[Instance[Any]]:
    """The family's slow instances (:attr:`~topoopt.core.family.Family.slow_examples`), made
    once per process."""
    if family not in _CACHE:
        _CACHE[family] = list(get_family(family).slow_examples())
    return _CACHE[family]


def supported(solver: str, family: str) -> list[Instance[Any]]:
    """The slow instances of ``family`` that ``solver`` accepts (an oracle refuses large ones)."""
    cls = solver_class(solver)
    return [x for x in slow_examples(family) if cls.unsupported_reason(x) is None]


@dataclass(frozen=True)
class Measurement:
    """One solve of a slow instance: the wall time around :func:`topoopt.solve`."""

    solver: str
    backend: str | None
    instance: str
    time_limit: float
    wall_s: float
    result: topoopt.Result

    @property
    def overshoot_s(self) -> float:
        """Wall time beyond the limit (negative when the solver finished earlier)."""
        return self.wall_s - self.time_limit

    @property
    def within(self) -> bool:
        """Whether the wall time is within :func:`allowed_s`."""
        return self.wall_s <= allowed_s(self.time_limit)


def measure(
    solver: str,
    instance: Instance[Any],
    backend: str | None = None,
    time_limit: float = TIME_LIMIT_S,
) -> Measurement:
    """Solve ``instance`` with ``time_limit`` and time the call (after collecting the garbage
    earlier work left: a large model dropped before must not be freed on this call's clock)."""
    gc.collect()
    start = time.perf_counter()
    result = topoopt.solve(instance, solver, backend=backend, time_limit=time_limit)
    wall = time.perf_counter() - start
    return Measurement(solver, result.backend, instance.name, time_limit, wall, result)


def main(argv: Sequence[str] = ()) -> None:
    """Print the table (solver, backend, instance, limit, wall, overshoot, status) of every
    solver (or those named) on each slow instance it accepts, with the default backend."""
    names = list(argv) or solver_names()
    print("| solver | instance | limit (s) | wall (s) | overshoot (s) | status |")
    print("|---|---|---|---|---|---|")
    for name in names:
        family = solver_class(name).family
        backend = DEFAULT_BACKEND if solver_class(name).uses_backend else None
        for instance in supported(name, family):
            m = measure(name, instance, backend)
            status = f"{m.result.status.label}, {m.result.termination.value}"
            flag = "" if m.within else " **over**"
            print(
                f"| {name} | {m.instance} | {m.time_limit:g} | {m.wall_s:.2f} | "
                f"{m.overshoot_s:+.2f}{flag} | {status} |",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
