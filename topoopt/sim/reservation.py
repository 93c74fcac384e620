"""Arnold's reservation for an imminent large job (Algorithm 1, Appendices G and H).

When the scheduler learns that a large pre-training job (the LPJ) will arrive, it plans the
LPJ's placement on the whole cluster and reserves those nodes, the *zone*. Until the LPJ
arrives, other jobs go outside the zone when they fit there; otherwise the ``mode`` decides:

===============  ================================================================================
mode             a job that does not fit outside the zone
===============  ================================================================================
``predicted``    enters the zone if its predicted end is no later than the LPJ's arrival (Arnold
                 with its JCT predictor, Algorithm 1 line 14), else waits
``strict``       waits (Arnold without the predictor: the "green line" of Fig. 14)
``best-effort``  enters the zone anyway (reserve-and-pack [43]: a preference, not a guarantee;
                 at its arrival the LPJ is placed like any job, wherever nodes are idle)
===============  ================================================================================

Under ``predicted`` and ``strict`` the LPJ, once arrived, goes first and starts on its zone as
soon as every zone node is idle (nothing is preempted: Algorithm 1's preemptible jobs are not
modelled, so a zone node still held when the LPJ arrives delays it). The engine records, after
every pass, the nodes running a job (the *allocation rate* of Appendix H over the cluster) and
the zone nodes held by other jobs (the *retention rate*: what would need manual preemption).
"""

from __future__ import annotations

from dataclasses import dataclass

from topoopt.core.errors import TopooptError

MODES = ("predicted", "strict", "best-effort")


@dataclass(frozen=True)
class Reservation:
    """A reservation for the job ``job`` of the trace, planned at ``announce_s``.

    Attributes
    ----------
    job
        The id of the large job (its submit time is its arrival).
    announce_s
        When the scheduler learns of it, plans its placement and reserves the zone (at most
        its arrival).
    mode
        ``predicted``, ``strict`` or ``best-effort`` (module docstring).
    """

    job: str
    announce_s: float
    mode: str = "predicted"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise TopooptError(f"reservation mode: {self.mode!r}; known: {', '.join(MODES)}")
        if not isinstance(self.announce_s, (int, float)) or self.announce_s != self.announce_s:
            raise TopooptError(f"reservation announce_s: must be a number, got {self.announce_s!r}")

    @classmethod
    def parse(cls, text: str, mode: str = "predicted") -> Reservation:
        """``JOB@SECONDS``: reserve for ``JOB``, announced at ``SECONDS``.

        Examples
        --------
        >>> Reservation.parse("llm@3600")
        Reservation(job='llm', announce_s=3600.0, mode='predicted')
        """
        job, sep, when = text.rpartition("@")
        try:
            announce = float(when)
        except ValueError:
            announce = float("nan")
        if not sep or not job or announce != announce:
            raise TopooptError(f"--reserve: {text!r}: write JOB@SECONDS (e.g. llm@3600)")
        return cls(job, announce, mode)
