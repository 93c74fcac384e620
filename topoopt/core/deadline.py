"""A hard stop for pure-Python work that does not look at the clock: :func:`interrupt_at`.

Building a Pyomo model and translating it for a backend are long pure-Python loops (Pyomo
calls the formulation's rules, the interface walks every expression) that cannot be told about
a time limit. :func:`interrupt_at` raises :class:`TimeUp` in the calling thread when a deadline
passes inside its block, so that a MIP solver can return its best incumbent (its warm start)
within the limit instead of finishing a build it has no time to solve.

How: a timer thread asks the interpreter to raise :class:`TimeUp` in the calling thread
(``PyThreadState_SetAsyncExc``, CPython's way of interrupting another thread). The exception
arrives at the next Python instruction; code running inside a C call (a MIP backend's own
search) is interrupted only when the call returns, so backends keep their own time limits.
Rules for using it:

* guard only code whose partial state is thrown away when it stops (a model being built, a
  backend model being filled), never code that holds resources whose release must not be cut
  short (a ``with`` block that redirects file descriptors must be *around* the guard, not
  inside it);
* :class:`TimeUp` derives from :class:`BaseException`, like :class:`KeyboardInterrupt`, so that
  library code with ``except Exception`` does not swallow it;
* when the block ends first, an interruption requested at the same moment is withdrawn or
  dropped: no :class:`TimeUp` is raised after the block (the ``finally`` clause clears the
  armed flag before anything can interrupt it, then withdraws under the timer's lock);
* the garbage collector is off inside the block (a gc callback or finaliser that receives
  :class:`TimeUp` would lose it; the request is also repeated until the block ends), which
  also spares a large model build the collector's passes;
* no request is made while the thread is importing a module (a frame of ``importlib`` on its
  stack; the request waits for the import to end): an import cut short leaves a package
  half-initialised for the rest of the process (measured: ``scipy.stats`` interrupted inside
  Pyomo's deferred import of SciPy, after which every later ``import scipy.stats`` failed
  with ``Module 'scipy' has no attribute '_lib'``). A thread that starts an import in the
  instant between the check and the request can still be interrupted in it.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class TimeUp(BaseException):
    """The deadline of an :func:`interrupt_at` block passed inside it."""


def _request(thread_id: int, exc: type[BaseException] | None) -> None:
    """Ask CPython to raise ``exc`` in thread ``thread_id`` (``None`` withdraws a request)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), None if exc is None else ctypes.py_object(exc)
    )


def _importing(thread_id: int) -> bool:
    """Whether thread ``thread_id`` is inside an import (a frame of ``importlib``)."""
    frame = sys._current_frames().get(thread_id)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextmanager
def interrupt_at(deadline: float | None) -> Iterator[None]:
    """Raise :class:`TimeUp` in this thread if ``time.perf_counter()`` passes ``deadline``
    while the block runs (``None``: no deadline, the block runs as is).

    Raises
    ------
    TimeUp
        At once when the deadline has already passed, or when it passes inside the block.

    Examples
    --------
    >>> import time
    >>> try:
    ...     with interrupt_at(time.perf_counter() + 0.05):
    ...         while True:
    ...             pass
    ... except TimeUp:
    ...     print("stopped")
    stopped
    """
    if deadline is None:
        yield
        return
    left = deadline - time.perf_counter()
    if left <= 0:
        raise TimeUp
    quiet = _QuietAboutTimeUp()
    for name in LOGGERS:
        logging.getLogger(name).addFilter(quiet)
    thread_id = threading.get_ident()
    lock = threading.Lock()
    state = {"armed": True}

    def fire() -> None:
        while True:
            with lock:
                if not state["armed"]:
                    return
                if not _importing(thread_id):
                    _request(thread_id, TimeUp)
            # an exception raised inside a finaliser is lost ("Exception ignored in ..."):
            # ask again until the block has ended
            time.sleep(REPEAT_S)

    timer = threading.Timer(left, fire)
    timer.daemon = True
    collecting = gc.isenabled()
    gc.disable()  # no collection (and no gc callback to swallow TimeUp) inside the block
    try:
        timer.start()  # inside the try: a request landing right after the start is disarmed
        yield
    finally:
        # First statement, no call before it: from here on the timer asks no more (it reads
        # the flag under the lock), so at most one request is still in flight.
        state["armed"] = False
        while True:
            try:
                with lock:  # waits out a request being made, then withdraws it if undelivered
                    _request(thread_id, None)
                break
            except TimeUp:  # delivered first: the block has ended, drop it (no other follows)
                continue
        timer.cancel()
        if collecting:
            gc.enable()
        for name in LOGGERS:
            logging.getLogger(name).removeFilter(quiet)


REPEAT_S = 0.05
"""Seconds between two requests to stop, until the block has ended."""


LOGGERS = ("pyomo.core",)
"""Loggers whose reports of an interrupted block are dropped (Pyomo logs a component whose
construction raised, even :class:`TimeUp`, before re-raising it)."""


class _QuietAboutTimeUp(logging.Filter):
    """Drops the records that report a :class:`TimeUp` (it is no error: the time was up)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "TimeUp" not in record.getMessage()


__all__ = ["TimeUp", "interrupt_at"]
