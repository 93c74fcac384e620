"""Trace formats: readers from a file to :class:`~topoopt.sim.traces._rows.Trace`.

=============  =====================================================  =======================
name           format                                                 reader
=============  =====================================================  =======================
``philly``     the Philly-derived CSV of several public simulators    :mod:`.philly`
``alibaba``    Alibaba cluster-trace-gpu-v2023 pod lists               :mod:`.alibaba`
``helios``     Helios / Acme job logs                                  :mod:`.helios`
``jsonl``      topoopt's own JSON Lines (with a JSON Schema)           :mod:`.native`
``csv``        topoopt's own CSV                                       :mod:`.native`
=============  =====================================================  =======================

A reader is ``read(path, *, skip_bad=False) -> Trace``; :data:`TRACE_FORMATS` holds them, and
a package adds one through the entry-point group ``topoopt.sim.traces``.
:func:`read_trace` guesses the format from the file's first line when none is named.
:func:`~.synthetic.synthetic` generates traces.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from topoopt.sim.jobs import TraceError
from topoopt.sim.registry import Registry
from topoopt.sim.traces import alibaba, helios, native, philly
from topoopt.sim.traces._rows import Rejected, Trace, open_text
from topoopt.sim.traces.synthetic import synthetic

TraceReader = Callable[..., Trace]

TRACE_FORMATS: Registry[TraceReader] = Registry(
    "trace format", "topoopt.sim.traces", ("topoopt.sim.traces",)
)
TRACE_FORMATS.register("philly", philly.read_philly)
TRACE_FORMATS.register("alibaba", alibaba.read_alibaba)
TRACE_FORMATS.register("helios", helios.read_helios)
TRACE_FORMATS.register("jsonl", native.read_jsonl)
TRACE_FORMATS.register("csv", native.read_native_csv)


def guess_format(path: str | Path) -> str:
    """The format of a trace file from its first line (a ``.jsonl`` name or ``{``: jsonl)."""
    file = Path(path)
    with open_text(file) as handle:
        first = handle.readline().strip()
    if file.suffix == ".jsonl" or first.startswith("{"):
        return "jsonl"
    columns = {name.strip() for name in first.lstrip("#").split(",")}
    if columns == set(philly.COLUMNS):
        return "philly"
    if columns == set(alibaba.COLUMNS):
        return "alibaba"
    if set(helios.REQUIRED) <= columns:
        return "helios"
    if set(native.REQUIRED) <= columns:
        return "csv"
    raise TraceError(
        f"{file}:1",
        None,
        f"cannot tell the trace format from the header; name one of "
        f"{', '.join(TRACE_FORMATS.names())}",
    )


def read_trace(path: str | Path, fmt: str | None = None, *, skip_bad: bool = False) -> Trace:
    """Read a trace file in ``fmt`` (guessed from the file when ``None``).

    ``skip_bad`` records malformed rows as rejected jobs instead of stopping at the first.
    """
    reader = TRACE_FORMATS.get(fmt or guess_format(path))
    return reader(path, skip_bad=skip_bad)


__all__ = ["TRACE_FORMATS", "Rejected", "Trace", "guess_format", "read_trace", "synthetic"]
