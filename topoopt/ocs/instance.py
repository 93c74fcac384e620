"""The ocs instance: an optical data-center network and the training jobs that share it.

JSON (the JSON Schema is :data:`topoopt.ocs.schema.SCHEMA`; ``docs/ocs.md`` explains every field
and unit)::

    {"family": "ocs", "format_version": 1, "name": "two-jobs",
     "network": {"oxc_port_gbps": 100.0, "reconfig_s": 0.0002,
                 "pods": [{"name": "p0", "oxc_ports": 8, "tor_gbps": 1600.0}, ...]},
     "jobs": [{"name": "j0", "type": "RAR", "gpus": {"p0": 4, "p1": 4},
               "t_train_s": 0.05, "traffic_bytes": 2.0e9},
              {"name": "j1", "type": "PS", "gpus": {"p1": 2, "p2": 2}, "t_train_s": 0.04,
               "traffic_bytes": 1.0e9, "t_agg_s": 0.002, "server_pod": "p1"}]}

A job's training time is ``t_train_s`` or the inputs of the paper's eq. 7 (``compute``). A PS
job's ``server_pod`` and a RAR job's ``ring`` are optional: omitted, the solvers choose them.
Every rule lives in the constructors, so an instance built in code is checked exactly like one
read from JSON.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import Instance
from topoopt.core.safejson import FileAccess
from topoopt.ocs.schema import (
    GBPS_RANGE,
    JOB_TYPES,
    LIMITS,
    MAX_BYTES,
    MAX_GPUS,
    MAX_PORTS,
    MAX_SECONDS,
)

if TYPE_CHECKING:
    from topoopt.ocs.result import OcsResult  # noqa: F401

limits.declare_all(LIMITS)

GBPS_TO_BYTES_PER_S = 1e9 / 8
"""Bytes per second in one Gb/s."""
K_PLAIN, K_RECOMPUTE = 6, 8
"""Eq. 7's FLOPs per parameter and token: forward + backward, and with recomputation."""


def _gbps(value: Any, path: str) -> float:
    low, high = GBPS_RANGE
    return v.as_positive(value, path, high, low)


@dataclass(frozen=True)
class Pod:
    """A pod: ``oxc_ports`` (``N_i``) OXC ports on its ToR, ``tor_gbps`` (``B_i``) between the
    ToR and the pod's servers per direction, and optionally its ``gpus``."""

    name: str
    oxc_ports: int
    tor_gbps: float
    gpus: int | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(self.name, "name"))
        ports = v.as_int(self.oxc_ports, "oxc_ports", minimum=0)
        if ports > MAX_PORTS:
            raise InvalidInstanceError("oxc_ports", f"must be <= {MAX_PORTS}, got {ports}")
        put(self, "oxc_ports", ports)
        put(self, "tor_gbps", _gbps(self.tor_gbps, "tor_gbps"))
        if self.gpus is not None:
            put(self, "gpus", _count(self.gpus, "gpus"))

    @classmethod
    def from_any(cls, item: Any) -> Pod:
        """A pod from a ``Pod`` or its JSON object."""
        if isinstance(item, Pod):
            return item
        data = v.as_mapping(item, "")
        return cls(
            v.field(data, "name"),
            v.field(data, "oxc_ports"),
            v.field(data, "tor_gbps"),
            data.get("gpus"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        out: dict[str, Any] = {
            "name": self.name,
            "oxc_ports": self.oxc_ports,
            "tor_gbps": self.tor_gbps,
        }
        if self.gpus is not None:
            out["gpus"] = self.gpus
        return out


def _count(value: Any, path: str) -> int:
    number = v.as_int(value, path, minimum=1)
    if number > MAX_GPUS:
        raise InvalidInstanceError(path, f"must be <= {MAX_GPUS}, got {number}")
    return number


@dataclass(frozen=True)
class Compute:
    """The inputs of the paper's eq. 7: ``t_train = K·tokens·Phi / (F_GPU·efficiency)``, ``K = 8``
    with recomputation, else 6.

    Examples
    --------
    >>> Compute(tokens=4096, parameters=1e9, gpu_flops=1e15, efficiency=0.5).t_train_s
    0.049152
    """

    tokens: float
    parameters: float
    gpu_flops: float
    efficiency: float
    recomputation: bool = False

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "tokens", v.as_positive(self.tokens, "tokens", MAX_BYTES))
        put(self, "parameters", v.as_positive(self.parameters, "parameters", MAX_BYTES))
        put(self, "gpu_flops", v.as_positive(self.gpu_flops, "gpu_flops", MAX_BYTES))
        put(self, "efficiency", v.as_positive(self.efficiency, "efficiency", 1.0))
        if not isinstance(self.recomputation, bool):
            raise InvalidInstanceError(
                "recomputation", f"must be true or false, got {self.recomputation!r}"
            )

    @property
    def k(self) -> int:
        """FLOPs per parameter and token: 8 with recomputation, else 6."""
        return K_RECOMPUTE if self.recomputation else K_PLAIN

    @property
    def t_train_s(self) -> float:
        """Eq. 7."""
        return self.k * self.tokens * self.parameters / (self.gpu_flops * self.efficiency)

    @classmethod
    def from_any(cls, item: Any) -> Compute:
        """From a ``Compute`` or its JSON object."""
        if isinstance(item, Compute):
            return item
        data = v.as_mapping(item, "")
        return cls(
            v.field(data, "tokens"),
            v.field(data, "parameters"),
            v.field(data, "gpu_flops"),
            v.field(data, "efficiency"),
            data.get("recomputation", False),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        out: dict[str, Any] = {
            "tokens": self.tokens,
            "parameters": self.parameters,
            "gpu_flops": self.gpu_flops,
            "efficiency": self.efficiency,
        }
        if self.recomputation:
            out["recomputation"] = True
        return out


@dataclass(frozen=True, init=False)
class Job:
    """A training job: its type, GPUs per pod, training time and traffic.

    Parameters
    ----------
    name
        Job name.
    type
        ``"PS"`` (parameter server), ``"RAR"`` (ring all-reduce) or ``"A2A"`` (all-to-all).
    gpus
        ``G_{i,j}``: pod name -> GPUs of the job on that pod (>= 1 each), as a mapping or
        ``(pod, count)`` pairs; ``None`` when ``units`` leaves the placement to the solver.
    traffic_bytes
        ``F``: bytes each GPU contributes per iteration (model size for PS/RAR, tokens x hidden
        bytes for A2A), >= 0.
    t_train_s
        Local training time per iteration (s, > 0); or give ``compute`` instead.
    compute
        The inputs of eq. 7 (:class:`Compute` or its JSON object) instead of ``t_train_s``.
    t_agg_s
        PS only: the server's aggregation time (s, >= 0, default 0).
    server_pod
        PS only: the server's pod, one of the job's pods; ``None`` lets the solver choose.
    ring
        RAR only: the job's pods in ring order, each once; ``None`` lets the solver choose.
    units, unit_gpus
        Instead of ``gpus``: ``units`` parallel units of ``unit_gpus`` GPUs each (default 1)
        whose pods the solver chooses (paper Algorithm 2, lines 10-15); a unit may be split over
        pods. Such a job has no fixed ``server_pod`` or ``ring`` (they depend on its pods).
    """

    name: str
    type: str
    gpus: tuple[tuple[str, int], ...]
    traffic_bytes: float
    t_train_s: float
    compute: Compute | None
    t_agg_s: float
    server_pod: str | None
    ring: tuple[str, ...] | None
    units: int | None
    unit_gpus: int

    def __init__(
        self,
        name: str,
        type: str,
        gpus: Mapping[str, int] | Iterable[tuple[str, int]] | None,
        traffic_bytes: float,
        t_train_s: float | None = None,
        *,
        compute: Compute | Mapping[str, Any] | None = None,
        t_agg_s: float | None = None,
        server_pod: str | None = None,
        ring: Sequence[str] | None = None,
        units: int | None = None,
        unit_gpus: int | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        if type not in JOB_TYPES:
            raise InvalidInstanceError(
                "type", f"must be one of {', '.join(JOB_TYPES)}, got {type!r}"
            )
        put(self, "type", type)
        if (gpus is None) == (units is None):
            raise InvalidInstanceError(
                "gpus", "give exactly one of gpus (GPUs per pod) and units (placed by the solver)"
            )
        if units is None and unit_gpus is not None:
            raise InvalidInstanceError("unit_gpus", "only a job given by units has it")
        put(self, "gpus", () if gpus is None else _parse_gpus(gpus))
        put(self, "units", None if units is None else _count(units, "units"))
        put(self, "unit_gpus", 1 if unit_gpus is None else _count(unit_gpus, "unit_gpus"))
        if self.units is not None and self.total_gpus > MAX_GPUS:
            raise InvalidInstanceError(
                "units", f"units x unit_gpus = {self.total_gpus} GPUs, more than {MAX_GPUS}"
            )
        traffic = v.as_float(traffic_bytes, "traffic_bytes", minimum=0, maximum=MAX_BYTES)
        if 0 < traffic < 1:
            raise InvalidInstanceError(
                "traffic_bytes", f"must be 0 or at least 1 byte, got {traffic:g}"
            )
        put(self, "traffic_bytes", traffic)
        if (t_train_s is None) == (compute is None):
            raise InvalidInstanceError(
                "t_train_s", "give exactly one of t_train_s and compute (the inputs of eq. 7)"
            )
        if compute is not None:
            with v.within("compute"):
                parsed = Compute.from_any(compute)
            if parsed.t_train_s > MAX_SECONDS:
                raise InvalidInstanceError(
                    "compute", f"eq. 7 gives {parsed.t_train_s:g} s, more than {MAX_SECONDS:g} s"
                )
            put(self, "compute", parsed)
            put(self, "t_train_s", parsed.t_train_s)
        else:
            put(self, "compute", None)
            put(self, "t_train_s", v.as_positive(t_train_s, "t_train_s", MAX_SECONDS))
        self._type_fields(t_agg_s, server_pod, ring)

    def _type_fields(self, t_agg_s: Any, server_pod: Any, ring: Any) -> None:
        """The fields only one job type has: ``t_agg_s``/``server_pod`` (PS), ``ring`` (RAR)."""
        put = object.__setattr__
        pods = [pod for pod, _ in self.gpus]
        for key, value, owner in (
            ("t_agg_s", t_agg_s, "PS"),
            ("server_pod", server_pod, "PS"),
            ("ring", ring, "RAR"),
        ):
            if value is not None and self.type != owner:
                raise InvalidInstanceError(
                    key, f"only {owner} jobs have it (this job is {self.type})"
                )
        put(self, "t_agg_s", 0.0)
        put(self, "server_pod", None)
        put(self, "ring", None)
        if not self.placed:
            for key, value in (("server_pod", server_pod), ("ring", ring)):
                if value is not None:
                    raise InvalidInstanceError(
                        key, "a job given by units has none (the solver chooses its pods first)"
                    )
            if self.type in ("PS", "A2A") and self.total_gpus < 2:
                raise InvalidInstanceError(
                    "units",
                    f"a {self.type} job needs at least 2 GPUs in all, got {self.total_gpus}",
                )
        if self.type == "PS" and t_agg_s is not None:
            put(self, "t_agg_s", v.as_float(t_agg_s, "t_agg_s", minimum=0, maximum=MAX_SECONDS))
        if self.type == "PS" and self.placed:
            if len(pods) < 2:
                raise InvalidInstanceError(
                    "gpus",
                    "a PS job must span at least two pods (its workers push to and pull "
                    f"from a server on one of them), got {len(pods)}",
                )
            if server_pod is not None:
                server = v.as_str(server_pod, "server_pod")
                if server not in pods:
                    raise InvalidInstanceError(
                        "server_pod",
                        f"must be one of the job's pods ({', '.join(pods)}), got {server!r}",
                    )
                put(self, "server_pod", server)
        if self.type == "A2A" and self.placed and self.total_gpus < 2:
            raise InvalidInstanceError("gpus", "an A2A job needs at least 2 GPUs in all")
        if ring is not None:
            order = tuple(v.as_str(p, f"ring[{i}]") for i, p in enumerate(v.as_tuple(ring, "ring")))
            if sorted(order) != sorted(pods):
                raise InvalidInstanceError(
                    "ring",
                    f"must list each of the job's pods ({', '.join(pods)}) once, got "
                    f"{', '.join(order) or 'none'}",
                )
            put(self, "ring", order)

    @classmethod
    def from_any(cls, item: Any) -> Job:
        """A job from a ``Job`` or its JSON object."""
        if isinstance(item, Job):
            return item
        data = v.as_mapping(item, "")
        return cls(
            v.field(data, "name"),
            v.field(data, "type"),
            None if data.get("gpus") is None else v.as_mapping(data["gpus"], "gpus"),
            v.field(data, "traffic_bytes"),
            data.get("t_train_s"),
            compute=data.get("compute"),
            t_agg_s=data.get("t_agg_s"),
            server_pod=data.get("server_pod"),
            ring=data.get("ring"),
            units=data.get("units"),
            unit_gpus=data.get("unit_gpus"),
        )

    @property
    def placed(self) -> bool:
        """Whether the instance gives the job's GPUs per pod (else the solver places its
        units)."""
        return self.units is None

    def with_gpus(self, gpus: Mapping[str, int]) -> Job:
        """This job placed on ``gpus`` (pod -> GPUs), its other fields kept."""
        return Job(
            self.name,
            self.type,
            gpus,
            self.traffic_bytes,
            None if self.compute is not None else self.t_train_s,
            compute=self.compute,
            t_agg_s=self.t_agg_s if self.type == "PS" else None,
        )

    def with_times(self, t_train_s: float, t_agg_s: float | None = None) -> Job:
        """This placed job with training time ``t_train_s`` (instead of its own or of eq. 7)
        and, for PS, aggregation time ``t_agg_s``; its other fields kept."""
        return Job(
            self.name,
            self.type,
            self.gpus,
            self.traffic_bytes,
            t_train_s,
            t_agg_s=t_agg_s if self.type == "PS" else None,
            server_pod=self.server_pod,
            ring=self.ring,
        )

    @property
    def pods(self) -> tuple[str, ...]:
        """The pods the job spans, in the order of :attr:`gpus`."""
        return tuple(pod for pod, _ in self.gpus)

    @property
    def total_gpus(self) -> int:
        """``G``: the job's GPUs in all."""
        if self.units is not None:
            return self.units * self.unit_gpus
        return sum(count for _, count in self.gpus)

    @property
    def iterations_per_round(self) -> int:
        """Training iterations per TDM round: 1 for PS (train, push, aggregate, pull), 2 for
        RAR and A2A (train and communicate, twice)."""
        return 1 if self.type == "PS" else 2

    @property
    def t_second_s(self) -> float:
        """What the job computes in its group's second compute phase (phase 3 for group 1,
        phase 4 for group 2): the aggregation for PS, a second training step otherwise."""
        return self.t_agg_s if self.type == "PS" else self.t_train_s

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.units is not None:
            out["units"] = self.units
            if self.unit_gpus != 1:
                out["unit_gpus"] = self.unit_gpus
        else:
            out["gpus"] = dict(self.gpus)
        if self.compute is not None:
            out["compute"] = self.compute.to_dict()
        else:
            out["t_train_s"] = self.t_train_s
        out["traffic_bytes"] = self.traffic_bytes
        if self.type == "PS":
            out["t_agg_s"] = self.t_agg_s
            if self.server_pod is not None:
                out["server_pod"] = self.server_pod
        if self.ring is not None:
            out["ring"] = list(self.ring)
        return out


def _parse_gpus(gpus: Any) -> tuple[tuple[str, int], ...]:
    items = gpus.items() if isinstance(gpus, Mapping) else v.as_tuple(gpus, "gpus")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise InvalidInstanceError(
                f"gpus[{i}]", f"must be a (pod, count) pair or use a JSON object, got {item!r}"
            )
        pod, count = item
        pod = v.as_str(pod, "gpus")
        out.append((pod, _count(count, f"gpus.{pod}")))
    if not out:
        raise InvalidInstanceError("gpus", "must name at least one pod")
    limits.check("ocs_job_pods", len(out), "gpus", f"{len(out)} pods")
    v.unique_names([pod for pod, _ in out], "gpus")
    return tuple(out)


@dataclass(frozen=True, init=False)
class OcsInstance(Instance["OcsResult"]):
    """Jobs sharing an optical data-center network, scheduled in a four-phase TDM round (OCS
    TDM paper §II; ``docs/ocs.md`` states the whole model).

    Parameters
    ----------
    name
        Instance name.
    pods
        The pods (:class:`Pod` objects or JSON objects), names unique.
    jobs
        The jobs (:class:`Job` objects or JSON objects), names unique, on known pods.
    oxc_port_gbps
        ``B_oxc``: bandwidth of one circuit, Gb/s.
    reconfig_s
        ``delta``: reconfiguration delay charged to every communication phase, s (>= 0).
    ports_per_circuit
        OXC ports a circuit takes at each end: 1 (default) or 2 (a transmit and a receive fibre
        port; every pod's ``oxc_ports`` must then be even). A pod has
        ``oxc_ports // ports_per_circuit`` circuits.
    labels
        Free-form metadata, string to string (part of equality, not of the hash).

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path (``jobs[1].gpus.p9``, ``network.pods[2].oxc_ports``, ...) and the
        rule.

    Examples
    --------
    >>> inst = OcsInstance(
    ...     "tiny",
    ...     pods=[Pod("p0", 4, 1600.0), Pod("p1", 4, 1600.0)],
    ...     jobs=[Job("j0", "RAR", {"p0": 2, "p1": 2}, 1e9, 0.05)],
    ...     oxc_port_gbps=100.0, reconfig_s=2e-4)
    >>> inst.circuit_budget, inst.pod_index["p1"]
    ((4, 4), 1)
    >>> inst == OcsInstance.from_dict(inst.to_dict())
    True
    """

    family: ClassVar[str] = "ocs"

    name: str
    pods: tuple[Pod, ...]
    jobs: tuple[Job, ...]
    oxc_port_gbps: float
    reconfig_s: float
    ports_per_circuit: int
    labels: dict[str, str] = field(hash=False)

    def __init__(
        self,
        name: str,
        pods: Iterable[Pod | Mapping[str, Any]],
        jobs: Iterable[Job | Mapping[str, Any]],
        oxc_port_gbps: float,
        reconfig_s: float,
        ports_per_circuit: int = 1,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        put(self, "labels", v.as_labels({} if labels is None else labels, "labels"))
        with v.within("network"):
            put(self, "oxc_port_gbps", _gbps(oxc_port_gbps, "oxc_port_gbps"))
            put(
                self,
                "reconfig_s",
                v.as_float(reconfig_s, "reconfig_s", minimum=0, maximum=MAX_SECONDS),
            )
            if ports_per_circuit not in (1, 2) or isinstance(ports_per_circuit, bool):
                raise InvalidInstanceError(
                    "ports_per_circuit", f"must be 1 or 2, got {ports_per_circuit!r}"
                )
            put(self, "ports_per_circuit", int(ports_per_circuit))
            put(self, "pods", self._parse_pods(pods))
        put(self, "jobs", self._parse_jobs(jobs))
        self._check_pod_gpus()

    def _parse_pods(self, pods: Any) -> tuple[Pod, ...]:
        raw = v.as_tuple(pods, "pods", min_len=1)
        limits.check("ocs_pods", len(raw), "pods", f"{len(raw)} pods")
        parsed = []
        for i, item in enumerate(raw):
            with v.within(f"pods[{i}]"):
                pod = Pod.from_any(item)
                if pod.oxc_ports % self.ports_per_circuit:
                    raise InvalidInstanceError(
                        "oxc_ports",
                        f"must be even when network.ports_per_circuit = 2 (a circuit takes a "
                        f"transmit and a receive port at each end), got {pod.oxc_ports}",
                    )
            parsed.append(pod)
        v.unique_names([p.name for p in parsed], "pods")
        return tuple(parsed)

    def _parse_jobs(self, jobs: Any) -> tuple[Job, ...]:
        raw = v.as_tuple(jobs, "jobs", min_len=1)
        limits.check("ocs_jobs", len(raw), "jobs", f"{len(raw)} jobs")
        known = {p.name: i for i, p in enumerate(self.pods)}
        parsed = []
        for i, item in enumerate(raw):
            with v.within(f"jobs[{i}]"):
                job = Job.from_any(item)
                for pod in job.pods:
                    if pod not in known:
                        raise InvalidInstanceError(
                            f"gpus.{pod}",
                            f"unknown pod {pod!r}; the network's pods: "
                            f"{', '.join(list(known)[:20])}",
                        )
                self._check_routable(job)
            parsed.append(job)
        v.unique_names([j.name for j in parsed], "jobs")
        return tuple(parsed)

    def _check_routable(self, job: Job) -> None:
        """Refuse a job that cannot get its circuits even alone in its group."""
        if job.traffic_bytes == 0 or len(job.pods) <= 1:
            return
        budget = {p.name: p.oxc_ports // self.ports_per_circuit for p in self.pods}
        k = len(job.pods)
        if job.type == "PS":
            servers = [job.server_pod] if job.server_pod else list(job.pods)
            for server in servers:
                needs = {p: (k - 1 if p == server else 1) for p in job.pods}
                if all(budget[p] >= n for p, n in needs.items()):
                    return
            what = f"server on {servers[0]!r}" if job.server_pod else "any server pod"
            pod, need = _first_short(needs, budget)
            raise InvalidInstanceError(
                "gpus",
                f"a PS job over {k} pods with {what} needs {need} circuit(s) at pod "
                f"{pod!r}, which has {budget[pod]} ({self._ports_rule()})",
            )
        need = min(2, k - 1) if job.type == "RAR" else k - 1
        needs = dict.fromkeys(job.pods, need)
        if any(budget[p] < n for p, n in needs.items()):
            pod, need = _first_short(needs, budget)
            raise InvalidInstanceError(
                "gpus",
                f"a {job.type} job over {k} pods needs {need} circuit(s) at pod {pod!r}, "
                f"which has {budget[pod]} ({self._ports_rule()})",
            )

    def _ports_rule(self) -> str:
        if self.ports_per_circuit == 1:
            return "one circuit per OXC port"
        return "two OXC ports per circuit"

    def _check_pod_gpus(self) -> None:
        used = [0] * len(self.pods)
        for job in self.jobs:
            for name, count in job.gpus:
                used[self.pod_index[name]] += count
        for i, pod in enumerate(self.pods):
            if pod.gpus is not None and used[i] > pod.gpus:
                raise InvalidInstanceError(
                    f"network.pods[{i}].gpus",
                    f"the jobs use {used[i]} GPUs on pod {pod.name!r}, which has {pod.gpus}",
                )
        unplaced = [j for j, job in enumerate(self.jobs) if not job.placed]
        if not unplaced:
            return
        for i, pod in enumerate(self.pods):
            if pod.gpus is None:
                raise InvalidInstanceError(
                    f"network.pods[{i}].gpus",
                    f"missing: jobs[{unplaced[0]}] is given by units, so every pod must give "
                    "its GPUs",
                )
        free = sum(p.gpus or 0 for p in self.pods) - sum(used)
        wanted = sum(self.jobs[j].total_gpus for j in unplaced)
        if wanted > free:
            raise InvalidInstanceError(
                "jobs", f"the jobs given by units need {wanted} GPUs, the pods have {free} free"
            )

    @property
    def is_placed(self) -> bool:
        """Whether every job's GPUs per pod are given (no job is given by units)."""
        return all(job.placed for job in self.jobs)

    def unplaced_jobs(self) -> list[str]:
        """The names of the jobs given by units."""
        return [job.name for job in self.jobs if not job.placed]

    def with_placement(self, placement: Mapping[str, Mapping[str, int]]) -> OcsInstance:
        """This instance with every job given by units placed on ``placement[job]`` (pod ->
        GPUs), validated like any instance (an unroutable placement raises).

        Raises
        ------
        InvalidInstanceError
            When a job given by units has no placement, or a placed job has one.
        """
        jobs = []
        for i, job in enumerate(self.jobs):
            if job.placed:
                if job.name in placement:
                    raise InvalidInstanceError(
                        f"jobs[{i}]", f"job {job.name!r} has its GPUs already, not a placement"
                    )
                jobs.append(job)
                continue
            if job.name not in placement:
                raise InvalidInstanceError(f"jobs[{i}]", f"no placement for job {job.name!r}")
            with v.within(f"jobs[{i}]"):
                jobs.append(job.with_gpus(placement[job.name]))
        return OcsInstance(
            self.name,
            self.pods,
            jobs,
            self.oxc_port_gbps,
            self.reconfig_s,
            self.ports_per_circuit,
            self.labels,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, files: FileAccess | None = None) -> OcsInstance:
        """Build and validate an instance from its JSON object (``files`` is unused: an ocs
        instance names no other file)."""
        data = v.as_mapping(data, "<root>")
        network = v.as_mapping(v.field(data, "network"), "network")
        return cls(
            v.field(data, "name"),
            v.field(network, "pods", "network"),
            v.field(data, "jobs"),
            v.field(network, "oxc_port_gbps", "network"),
            v.field(network, "reconfig_s", "network"),
            network.get("ports_per_circuit", 1),
            data.get("labels"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the instance."""
        network: dict[str, Any] = {
            "oxc_port_gbps": self.oxc_port_gbps,
            "reconfig_s": self.reconfig_s,
        }
        if self.ports_per_circuit != 1:
            network["ports_per_circuit"] = self.ports_per_circuit
        network["pods"] = [p.to_dict() for p in self.pods]
        return {
            **self.json_header(),
            "network": network,
            "jobs": [j.to_dict() for j in self.jobs],
        }

    @property
    def n_pods(self) -> int:
        """``|P|``."""
        return len(self.pods)

    @property
    def n_jobs(self) -> int:
        """``|J|``."""
        return len(self.jobs)

    @functools.cached_property
    def pod_index(self) -> dict[str, int]:
        """Pod name -> position."""
        return {p.name: i for i, p in enumerate(self.pods)}

    @functools.cached_property
    def job_index(self) -> dict[str, int]:
        """Job name -> position."""
        return {j.name: i for i, j in enumerate(self.jobs)}

    @functools.cached_property
    def circuit_budget(self) -> tuple[int, ...]:
        """``C_i = N_i // ports_per_circuit``: the circuits each pod can terminate."""
        return tuple(p.oxc_ports // self.ports_per_circuit for p in self.pods)

    @property
    def circuit_bps(self) -> float:
        """``B_oxc`` in bytes/s."""
        return self.oxc_port_gbps * GBPS_TO_BYTES_PER_S

    @functools.cached_property
    def tor_bps(self) -> tuple[float, ...]:
        """``B_i`` of every pod in bytes/s."""
        return tuple(p.tor_gbps * GBPS_TO_BYTES_PER_S for p in self.pods)

    def job_pods(self, job: int) -> tuple[int, ...]:
        """The pod numbers of job number ``job``, in the order of its ``gpus``."""
        return tuple(self.pod_index[p] for p in self.jobs[job].pods)


def _first_short(needs: Mapping[str, int], budget: Mapping[str, int]) -> tuple[str, int]:
    """The first pod whose budget is below its need."""
    for pod, need in needs.items():
        if budget[pod] < need:
            return pod, need
    raise AssertionError("no pod is short")
