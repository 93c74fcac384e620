"""topoopt.core.deadline.interrupt_at: stops a busy block, never leaks TimeUp after the block,
restores the garbage collector. No duration is asserted."""

from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path

import pytest

from topoopt.core.deadline import REPEAT_S, TimeUp, interrupt_at


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
    """Blocks that end around their deadline: either TimeUp inside, or nothing at all later,
    and no timer keeps asking. (The timer started outside the ``try`` before: a request landing
    right after the start left it armed, asking every 50 ms for ever; a CI run hung here.)"""
    threads_before = threading.active_count()
    stopped = 0
    for i in range(2000):
        try:
            with interrupt_at(time.perf_counter() + 0.0001 * (i % 7)):
                sum(range(i % 3000))
        except TimeUp:
            stopped += 1
        for _ in range(3000):  # code after the block: a leaked TimeUp would land here
            pass
    assert gc.isenabled()
    assert stopped > 0  # at least the blocks whose deadline had passed (i % 7 == 0)
    # A disarmed timer ends at its next look at the flag (within REPEAT_S); one that kept
    # asking would stay. Wait generously for a loaded machine.
    waited = time.monotonic() + 100 * REPEAT_S
    while threading.active_count() > threads_before and time.monotonic() < waited:
        time.sleep(REPEAT_S / 5)
    assert threading.active_count() <= threads_before


def test_an_import_in_progress_is_not_cut_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline passes while a module is being imported: TimeUp comes after the import,
    which completes (an import cut short leaves a package half-initialised for the process)."""
    (tmp_path / "slow_to_import.py").write_text(
        "import time\nend = time.perf_counter() + 0.3\nwhile time.perf_counter() < end:\n"
        "    pass\nDONE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_to_import", raising=False)
    imported = []
    with pytest.raises(TimeUp), interrupt_at(time.perf_counter() + 0.05):
        import slow_to_import

        imported.append(slow_to_import.DONE)
        while True:
            pass
    assert imported == [True]
