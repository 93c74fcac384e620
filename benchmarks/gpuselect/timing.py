"""Search time per request (BandPilot Fig. 8: hybrid under 250 ms on 32 GPUs) and at scale.

* 32 GPUs: the H100 cluster (measured tables, 50 GB/s fabric) with every GPU idle and in the
  protocol's availability scenarios, k = 1..32;
* 1024 GPUs: 128 hosts of the four simulated types (topology-derived model), 30 % busy;
* 8192 GPUs: 1024 such hosts (``generate.large_pool(gpus=8192)``).

Times are wall time of one ``topoopt.solve`` call (search + evaluate + check), single
process. Usage::

    python benchmarks/gpuselect/timing.py --out benchmarks/gpuselect/results/timing.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import topoopt
from topoopt.gpuselect.generate import CLUSTERS, cluster_model, large_pool, protocol
from topoopt.gpuselect.instance import GpuSelectInstance

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "hosts"


def times(
    instances: list[GpuSelectInstance], solver: str, repeat: int = 3, **kwargs: object
) -> list[float]:
    """Best-of-``repeat`` wall time (s) of each instance."""
    out = []
    for inst in instances:
        out.append(min(topoopt.solve(inst, solver, **kwargs).total_s for _ in range(repeat)))
    return out


def row(label: str, ts: list[float]) -> str:
    ms = [1000 * t for t in ts]
    return (
        f"| {label} | {len(ms)} | {statistics.mean(ms):.1f} | {statistics.median(ms):.1f} "
        f"| {max(ms):.1f} |"
    )


POOL_SOLVERS = (
    "gpuselect/hybrid",
    "gpuselect/eha",
    "gpuselect/pts",
    "gpuselect/auto",
    "gpuselect/enumerate",
    "gpuselect/mip",
    "gpuselect/topo",
)


def pool_table(gpus: int) -> list[str]:
    """Time per request (ms, one run each) of every solver on a ``gpuselect``-GPU pool, and
    the hybrid's GBE."""
    big = large_pool(seed=0, gpus=gpus, ks=(8, 32, 64, 128, 256, 512))
    lines = [
        "",
        f"{gpus}-GPU pool ({gpus // 8} hosts, 4090/V100/A6000/A800 in turn, 30 % busy, "
        f"{big[0].total_available} idle GPUs; `generate.large_pool(seed=0, gpus={gpus})`), "
        "ms of one call (MIP with a 120 s limit):",
        "",
        "| solver | " + " | ".join(f"k={i.k}" for i in big) + " | median |",
        "|---|" + "---|" * (len(big) + 1),
    ]
    for solver in POOL_SOLVERS:
        if gpus > 1024 and solver in ("gpuselect/mip", "gpuselect/topo"):
            continue
        ts = [1000 * t for t in times(big, solver, repeat=1, time_limit=120)]
        cells = " | ".join(f"{t:.0f}" for t in ts)
        lines.append(f"| {solver} | {cells} | {statistics.median(ts):.0f} |")
    gbe = []
    for inst in big:
        best = topoopt.solve(inst, "gpuselect/enumerate").objective
        got = topoopt.solve(inst, "gpuselect/hybrid").objective
        gbe.append(f"{100 * got / best:.1f} %")
    lines.append("| hybrid GBE | " + " | ".join(gbe) + " | |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument(
        "--out", default=str(ROOT / "benchmarks" / "gpuselect" / "results" / "timing.md")
    )
    args = parser.parse_args()
    data = args.data_dir if Path(args.data_dir).is_dir() else None
    h100 = CLUSTERS["h100"]
    model = cluster_model(h100, data)
    full = [
        GpuSelectInstance(f"h100-all-k{k}", k, h100.hosts(), model, cluster="h100")
        for k in range(1, 33)
    ]
    scen = protocol(seed=0, cluster="h100", scenarios=5, data_dir=data)
    lines = [
        "# gpuselect — search time per request",
        "",
        "Command: `python benchmarks/gpuselect/timing.py`",
        "",
        f"32-GPU model: {'measured tables' if data else 'topology-derived (no data)'}; "
        "times are best of 3, in ms, of one `topoopt.solve` call.",
        "",
        "| case | requests | mean | median | max |",
        "|---|---|---|---|---|",
    ]
    for solver in (
        "gpuselect/hybrid",
        "gpuselect/eha",
        "gpuselect/pts",
        "gpuselect/auto",
        "gpuselect/enumerate",
        "gpuselect/mip",
    ):
        lines.append(row(f"{solver}, H100 32 GPUs all idle, k=1..32", times(full, solver)))
        lines.append(row(f"{solver}, H100 protocol scenarios (5 per k)", times(scen, solver, 1)))
    for gpus in (1024, 8192):
        lines += pool_table(gpus)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
