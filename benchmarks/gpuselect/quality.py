"""Quality of EHA, PTS and the hybrid against the optimum on measured tables (issue 14).

Requests: k = 2..31 on a 4-host x 8-GPU cluster, 10 availability scenarios per k (300 in
all), drawn as in the protocol (``generate.protocol``: the number of busy GPUs uniform on
``0..32-k``, seeded by ``[seed, k, scenario]``). Models, all from the measured tables of
``../shared/data/hosts`` (intra-host all-reduce of two H100 hosts, averaged):

* ``h100`` — the paper's simulator, 50 GB/s fabric (every spanning subset is worth 50 GB/s);
* ``h100-nic4`` — the same with NIC sharing beyond 4 GPUs per host (``gpus_per_nic=4``);
* ``het-4mix`` — one host each of 4090, V100, A6000, A800, 12.5 GB/s fabric;
* ``het-ra`` — two 4090 and two A800 hosts, 12.5 GB/s fabric.

GBE = B / optimum of ``gpuselect/enumerate`` (paper eq. 4); "at optimum" counts GBE >= 1 - 1e-9;
time is the median ``total_s`` of one ``topoopt.solve`` call. ``eha (balanced)`` and
``hybrid (balanced)`` run with ``splits="balanced"``: the candidate set of topoopt before
issue 14. Usage::

    python benchmarks/gpuselect/quality.py            # writes results/quality.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import topoopt
from topoopt.gpuselect.generate import protocol
from topoopt.gpuselect.instance import GpuSelectInstance

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "hosts"
SOLVERS: list[tuple[str, str, dict[str, object]]] = [
    ("eha (balanced)", "gpuselect/eha", {"splits": "balanced"}),
    ("eha", "gpuselect/eha", {}),
    ("pts", "gpuselect/pts", {}),
    ("hybrid (balanced)", "gpuselect/hybrid", {"splits": "balanced"}),
    ("hybrid", "gpuselect/hybrid", {}),
    ("auto", "gpuselect/auto", {}),
]


def cases(data: str, seed: int, scenarios: int) -> dict[str, list[GpuSelectInstance]]:
    """The request sets of the module docstring, by name."""
    ks = tuple(range(2, 32))
    h100 = protocol(seed, "h100", scenarios, ks, data)
    nic = protocol(seed, "h100", scenarios, ks, data, gpus_per_nic=4)
    mix = protocol(seed, "het-4mix", scenarios, ks, data)
    ra = protocol(seed, "het-ra", scenarios, ks, data)
    return {"h100": h100, "h100-nic4": nic, "het-4mix": mix, "het-ra": ra}


def measure(instances: list[GpuSelectInstance]) -> dict[str, dict[str, float]]:
    """Per solver label: mean GBE, share at the optimum, median time (ms), and the requests
    where it is worse / better than its balanced-only version."""
    optimum = [topoopt.solve(i, "gpuselect/enumerate").objective for i in instances]
    values: dict[str, list[float]] = {}
    out: dict[str, dict[str, float]] = {}
    for label, name, options in SOLVERS:
        got, ms = [], []
        for inst in instances:
            res = topoopt.solve(inst, name, **options)
            got.append(res.objective)
            ms.append(1000 * res.total_s)
        values[label] = got
        gbe = [g / o if o > 0 else 1.0 for g, o in zip(got, optimum, strict=True)]
        out[label] = {
            "gbe": statistics.mean(gbe),
            "optimal": sum(x >= 1 - 1e-9 for x in gbe) / len(gbe),
            "ms": statistics.median(ms),
        }
        old = values.get(f"{label} (balanced)")
        if old is not None:
            out[label]["worse"] = sum(g < o - 1e-9 for g, o in zip(got, old, strict=True))
            out[label]["better"] = sum(g > o + 1e-9 for g, o in zip(got, old, strict=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument(
        "--out", default=str(ROOT / "benchmarks" / "gpuselect" / "results" / "quality.md")
    )
    args = parser.parse_args()
    if not Path(args.data_dir).is_dir():
        sys.exit(f"no measured tables in {args.data_dir} (--data-dir)")
    lines = [
        "# gpuselect — quality against the optimum on measured tables",
        "",
        "Command: `python benchmarks/gpuselect/quality.py` "
        f"(seed {args.seed}, {args.scenarios} scenarios per k, k = 2..31)",
        "",
        "GBE = B / optimum; at opt. = share of requests at the optimum; time = median ms of "
        "one `topoopt.solve` call; worse / better = requests where the solver is below / "
        'above its balanced-only version (`splits="balanced"`).',
        "",
    ]
    for case, instances in cases(args.data_dir, args.seed, args.scenarios).items():
        stats = measure(instances)
        lines += [
            f"## {case} ({len(instances)} requests)",
            "",
            "| solver | mean GBE | at opt. | median ms | worse | better |",
            "|---|---|---|---|---|---|",
        ]
        for label, s in stats.items():
            worse = f"{s['worse']:.0f}" if "worse" in s else ""
            better = f"{s['better']:.0f}" if "better" in s else ""
            lines.append(
                f"| {label} | {s['gbe']:.4f} | {100 * s['optimal']:.1f} % | {s['ms']:.2f} "
                f"| {worse} | {better} |"
            )
        lines.append("")
        print("\n".join(lines[-len(stats) - 4 :]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))


if __name__ == "__main__":
    main()
