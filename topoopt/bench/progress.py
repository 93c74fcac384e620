"""Progress of ``topoopt bench`` on stderr: a live bar on a terminal, plain lines in a log.

On a terminal, a rich progress bar shows the running runs, runs done / total, errors and the
elapsed time. Anywhere else (stderr redirected to a file, a CI log, a pipe) a live bar cannot
redraw itself, so :class:`PlainProgress` prints plain lines instead
(:func:`progress_line`)::

    bench: 35/70 done, 2 errors, elapsed 1m05s, ETA 1m05s

one each time another tenth of the runs is done, at least one every
:data:`HEARTBEAT_S` seconds while runs are going (so a log shows that a long run is alive),
and a final ``bench: 70/70 done, 2 errors, elapsed 2m10s`` line.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from topoopt.bench.records import ERROR_STATUS, Record, record_key
from topoopt.bench.task import Task
from topoopt.core.text import printable

STEPS = 10
"""Plain progress prints a line each time another ``1 / STEPS`` of the runs is done."""
HEARTBEAT_S = 60.0
"""... and at least one line every this many seconds while runs are going."""
LABEL_CHARS = 80
"""Longest run label shown in the live bar."""


def format_duration(seconds: float) -> str:
    """``seconds`` as ``42s``, ``1m05s`` or ``2h03m07s`` (rounded to the second).

    Examples
    --------
    >>> format_duration(4.4), format_duration(65), format_duration(7387.2), format_duration(-1)
    ('4s', '1m05s', '2h03m07s', '0s')
    """
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def progress_line(
    done: int, total: int, errors: int, elapsed: float, *, final: bool = False
) -> str:
    """One plain progress line.

    The ETA assumes the runs left take as long as the runs done did on average; it is ``?``
    before the first run is done and left out of the ``final`` line.

    Examples
    --------
    >>> progress_line(35, 70, 2, 65.0)
    'bench: 35/70 done, 2 errors, elapsed 1m05s, ETA 1m05s'
    >>> progress_line(0, 70, 0, 3.0)
    'bench: 0/70 done, 0 errors, elapsed 3s, ETA ?'
    >>> progress_line(70, 70, 1, 130.0, final=True)
    'bench: 70/70 done, 1 error, elapsed 2m10s'
    """
    line = (
        f"bench: {done}/{total} done, {errors} error{'' if errors == 1 else 's'}, "
        f"elapsed {format_duration(elapsed)}"
    )
    if final:
        return line
    eta = format_duration(elapsed / done * (total - done)) if done else "?"
    return f"{line}, ETA {eta}"


class PlainProgress:
    """Plain progress lines for a log (see the module): a line at every tenth of the runs, a
    heartbeat line every :data:`HEARTBEAT_S` seconds without one, a final line on
    :meth:`close`.

    Parameters
    ----------
    total
        Runs to do.
    stream
        Where lines go (default: ``sys.stderr`` at the time of writing).
    heartbeat
        Seconds between lines when no tenth is completed (``None``: no heartbeat thread).
    clock
        Monotonic clock (tests pass a fake one).

    Examples
    --------
    >>> import io
    >>> out, now = io.StringIO(), [0.0]
    >>> p = PlainProgress(20, stream=out, heartbeat=None, clock=lambda: now[0])
    >>> for i in range(5):
    ...     now[0] += 2.0
    ...     p.advance(error=(i == 1))
    >>> p.close()
    >>> print(out.getvalue(), end="")
    bench: 2/20 done, 1 error, elapsed 4s, ETA 36s
    bench: 4/20 done, 1 error, elapsed 8s, ETA 32s
    bench: 5/20 done, 1 error, elapsed 10s
    """

    def __init__(
        self,
        total: int,
        *,
        stream: IO[str] | None = None,
        heartbeat: float | None = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.done = 0
        self.errors = 0
        self._stream = stream
        self._clock = clock
        self._start = self._last = clock()
        self._next_step = 1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if heartbeat is not None and total > 0:
            self._thread = threading.Thread(
                target=self._beat, args=(heartbeat,), name="bench-progress", daemon=True
            )
            self._thread.start()

    def _write(self, line: str) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):  # the log went away: progress is not worth failing for
            pass

    def _emit(self, *, final: bool = False) -> None:
        now = self._clock()
        self._last = now
        self._write(
            progress_line(self.done, self.total, self.errors, now - self._start, final=final)
        )

    def _step_reached(self) -> bool:
        """Whether ``done`` reached the next tenth of ``total`` (and move past it)."""
        reached = False
        while self._next_step <= STEPS and self.done >= math.ceil(
            self.total * self._next_step / STEPS
        ):
            self._next_step += 1
            reached = True
        return reached

    def advance(self, *, error: bool = False) -> None:
        """A run is done (``error``: it is an error record)."""
        with self._lock:
            self.done += 1
            self.errors += bool(error)
            if self._step_reached() and self.done < self.total:
                self._emit()

    def _beat(self, every: float) -> None:
        while not self._stop.wait(min(every, 1.0)):
            with self._lock:
                if self._clock() - self._last >= every and not self._stop.is_set():
                    self._emit()

    def close(self) -> None:
        """Stop the heartbeat and print the final line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._emit(final=True)


class BenchProgress:
    """The progress display of one ``topoopt bench``: :class:`PlainProgress` when stderr is not
    a terminal, a rich live bar when it is, nothing when ``enabled`` is false.

    Use as a context manager; :meth:`on_start` and :meth:`on_record` are the callbacks of
    :func:`~topoopt.bench.runner.run_benchmark`.
    """

    def __init__(self, total: int, *, enabled: bool = True, console: Console | None = None) -> None:
        self.total = total
        self.enabled = enabled
        self.console = console if console is not None else Console(stderr=True)
        self.live = enabled and self.console.is_terminal
        self._running: dict[tuple[object, ...], str] = {}
        self._errors = 0
        self._plain: PlainProgress | None = None
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> BenchProgress:
        if not self.enabled:
            return self
        if not self.live:
            self._plain = PlainProgress(self.total, stream=self.console.file)
            return self
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        self._bar.start()
        self._task = self._bar.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._plain is not None:
            self._plain.close()
        if self._bar is not None:
            self._bar.stop()

    def description(self) -> str:
        """The live bar's text: the last two runs started (labels escaped, so that
        ``exact-mip[highs]`` is shown as written, not read as rich markup) and the errors."""
        shown = [
            escape(printable(label, LABEL_CHARS)) for label in list(self._running.values())[-2:]
        ]
        now = " | ".join(shown) or "waiting"
        failed = f" [red]{self._errors} error(s)[/red]" if self._errors else ""
        return f"{now}{failed}"

    def on_start(self, task: Task) -> None:
        """A run started."""
        self._running[task.key] = task.label
        if self._bar is not None:
            self._bar.update(self._task, description=self.description())

    def on_record(self, record: Record) -> None:
        """A run's record was written."""
        self._running.pop(record_key(record), None)
        error = record["status"] == ERROR_STATUS
        self._errors += error
        if self._plain is not None:
            self._plain.advance(error=error)
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=self.description())
