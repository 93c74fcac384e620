"""BandPilot's dispatch in the simulator, on measured V100 and H100 bandwidths.

    python benchmarks/sim/dispatch.py [--jobs 2]

16 hosts of 8 GPUs (``2x8:8``) searched with the measured per-subset all-reduce table of one
host — V100 (``data:hosts/V100_bandwidth_16MiB.csv``, a hybrid cube mesh) and H100
(``data:hosts/H100_node26_allreduce_16MiB.csv``, NVSwitch) — and 50 GB/s between hosts; a
synthetic stream of 3,000 jobs of 2 to 8 GPUs (uniform) at offered load 0.9, seed 0, under
``first-fit``; each job's GPUs picked among the 4 hosts with the most free GPUs by
``gpuselect/default``, ``topo``, ``eha``, ``pts`` and ``auto`` (exact). Run folders go to
``benchmarks/sim/runs/dispatch`` (not committed); the report and the summaries to
``benchmarks/sim/dispatch/``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from publish import run_and_publish  # benchmarks/sim/publish.py, beside this script

from topoopt.sim.sweep import RunSpec
from topoopt.sim.traces import synthetic
from topoopt.sim.traces.native import write_native

HERE = Path(__file__).resolve().parent
DISPATCHERS = ("default", "topo", "eha", "pts", "auto")
TABLES = {
    "V100": "data:hosts/V100_bandwidth_16MiB.csv",
    "H100": "data:hosts/H100_node26_allreduce_16MiB.csv",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=Path, default=HERE / "runs" / "dispatch")
    parser.add_argument("--out", type=Path, default=HERE / "dispatch")
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    sizes = tuple(range(2, 9))
    trace = synthetic(
        jobs=3000, cluster_gpus=128, load=0.9, seed=0, sizes=sizes, weights=(1,) * len(sizes)
    )
    trace_file = write_native(trace.jobs, args.runs / "trace.jsonl")
    base = RunSpec(
        out_dir="",
        policy="first-fit",
        cluster_shape="2x8:8",
        trace_file=str(trace_file),
        inter_gbps=50.0,
    )
    specs = {
        f"{host}-{name}": replace(
            base,
            dispatch=f"gpuselect/{name}",
            host_type=host,
            host_table=table,
            out_dir=str(args.runs / f"{host}-{name}"),
        )
        for host, table in TABLES.items()
        for name in DISPATCHERS
    }
    run_and_publish(
        specs,
        args.out,
        title="BandPilot's dispatch on measured V100 and H100 bandwidths",
        jobs=args.jobs,
    )


if __name__ == "__main__":
    main()
