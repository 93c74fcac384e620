"""What a family's own report section gets, and how the report finds it.

A family declares its sections in :attr:`Family.report_sections
<topoopt.core.family.Family.report_sections>` as ``"module:function"`` references; each
function maps the records of one family × suite (or of all its suites) and a
:class:`SectionContext` to document blocks (:mod:`topoopt.bench.document`). Sections work
from records alone (their ``tags`` and ``size`` included): they never load instances or
solvers. The report asks the registry for the family, so records of a plug-in family get its
sections when the plug-in is loaded (``topoopt report --plugin MODULE``); without it the
report shows the generic tables only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topoopt.bench.analysis import BestKnown, InstanceId
from topoopt.bench.document import Block
from topoopt.bench.records import Record
from topoopt.core.errors import UnknownFamilyError
from topoopt.core.family import Family


@dataclass(frozen=True)
class SectionContext:
    """What a section function gets besides the records.

    Attributes
    ----------
    best
        Best known objective of every solved instance.
    prefix
        Unique stem for the names of the section's plots (file names).
    """

    best: Mapping[InstanceId, BestKnown]
    prefix: str


SectionFn = Callable[[Sequence[Record], SectionContext], list[Block]]
"""``section(records, ctx) -> blocks``."""


def registered_family(name: str) -> Family[Any, Any] | None:
    """The registered family ``name``, or ``None`` when it is not installed or loaded."""
    from topoopt.core.registry import get_family

    try:
        return get_family(name)
    except UnknownFamilyError:
        return None


def family_sections(name: str) -> list[tuple[str, SectionFn]]:
    """``(title, function)`` of every report section of family ``name`` (none if unknown)."""
    family = registered_family(name)
    if family is None:
        return []
    return [(section.title, section.load()) for section in family.report_sections]


def family_size_figure(name: str) -> str | None:
    """The size figure family ``name`` plots time against, if it names one."""
    family = registered_family(name)
    return None if family is None else family.size_figure
