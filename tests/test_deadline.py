"""topoopt.core.deadline.interrupt_at: stops a busy block, never leaks TimeUp after the block,
restores the garbage collector. No duration is asserted."""

from __future__ import annotations

import gc
import time

import pytest

from topoopt.core.deadline import TimeUp, interrupt_at


def test_a_busy_loop_is_stopped() -> None:
    with pytest.raises(TimeUp), interrupt_at(time.perf_counter() + 0.02):
        while True:
            pass
    assert gc.isenabled()


def test_no_deadline_runs_the_block() -> None:
    with interrupt_at(None):
        total = sum(range(1000))
    assert total == 499500


def test_a_passed_deadline_stops_at_once() -> None:
    ran = []
    with pytest.raises(TimeUp), interrupt_at(time.perf_counter() - 1):
        ran.append(1)
    assert ran == []


def test_nothing_leaks_when_the_block_ends_near_the_deadline() -> None:
    """Blocks that end around their deadline: either TimeUp inside, or nothing at all later."""
    stopped = 0
    for i in range(200):
        try:
            with interrupt_at(time.perf_counter() + 0.0005 * (i % 5)):
                sum(range(2000))
        except TimeUp:
            stopped += 1
        for _ in range(20_000):  # code after the block: a leaked TimeUp would land here
            pass
    assert gc.isenabled()
    assert 0 <= stopped <= 200
