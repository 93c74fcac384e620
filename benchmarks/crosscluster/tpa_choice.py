"""Which partitioner for the simulator's TPA: ``partition/heuristic-ilp`` or greedy-lowcut?

    python benchmarks/crosscluster/tpa_choice.py [--runs DIR] [--sample 40]

Replays decisions of the ``spiderflow`` runs of ``fig9.py`` and ``fig12.py`` (jobs of several
GPUs, their clusters and nodes as SpinSearch chose them) and times, per decision:

* the simulator's TPA with ``partition/greedy-lowcut`` (every pipeline depth: the grid graph cut
  across clusters, then nodes; priced by the cost model), as ``spiderflow`` runs it;
* the same with ``partition/genetic`` (``dtfm``'s);
* ``partition/heuristic-ilp`` on the same decision as a two-level instance (the job as a chain
  of one-GPU layer blocks, each cluster's nodes, bandwidths and the model's figures): greedy-lowcut
  across clusters, then a ``parallelconfig/mip`` (HiGHS) per cluster.

Writes ``results/tpa_choice.md`` and ``tpa_choice.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import HERE, RESULTS, dump, environment, markdown_table

from topoopt.core.registry import get_solver
from topoopt.crosscluster.settings import spiderflow_scale, spiderflow_testbed
from topoopt.parallelconfig.instance import Node
from topoopt.partition.instance import Cluster, PartitionInstance, Training, Vertex
from topoopt.sim.crosscluster.cost import (
    EFFECTIVE_FLOPS,
    GRAD_BYTES_PER_PARAM,
    MICRO_BATCHES_PER_GPU,
    Network,
    activation_bytes,
)
from topoopt.sim.crosscluster.models import CATALOG
from topoopt.sim.crosscluster.planner import tpa_plan
from topoopt.sim.crosscluster.policies import GENETIC_OPTIONS
from topoopt.sim.crosscluster.state import FreeGpus


def _decisions(folder: Path, limit: int) -> list[dict]:
    out = []
    for line in (folder / "jobs.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["status"] == "finished" and r["gpus"] > 1 and len(r["nodes"]) > 1:
            out.append(r)
    step = max(1, len(out) // limit)
    return out[::step][:limit]


def _gpus(state: FreeGpus, record: dict) -> list[tuple[int, int, int]]:
    number = {name: k for k, name in enumerate(state.node_names)}
    gpus = []
    for node, devices in zip(record["nodes"], record["devices"], strict=True):
        n = number[node]
        gpus += [(state.node_cluster[n], n, i) for i in devices]
    return sorted(gpus)


def _heuristic_ilp_instance(record: dict, state: FreeGpus, net: Network) -> PartitionInstance:
    model = CATALOG[record["model"]]
    gpus = _gpus(state, record)
    g = len(gpus)
    used = sorted({c for c, _, _ in gpus})
    clusters = []
    for c in used:
        nodes: dict[str, int] = {}
        for cc, n, _ in gpus:
            if cc == c:
                nodes[f"n{n}"] = nodes.get(f"n{n}", 0) + 1
        clusters.append(
            Cluster(
                str(c),
                sum(nodes.values()),
                tuple(Node(name, count) for name, count in nodes.items()),
                float(net.intra_gbps[c]),
                float(net.inter_gbps[c]),
            )
        )
    links = [
        (str(a), str(b), float(net.beta_gbps[a, b]))
        for i, a in enumerate(used)
        for b in used[i + 1 :]
    ]
    compute = 6 * model.params * model.seq_len / EFFECTIVE_FLOPS / g
    vertices = [
        Vertex(f"b{k}", 1, compute, GRAD_BYTES_PER_PARAM * model.params / g) for k in range(g)
    ]
    traffic = MICRO_BATCHES_PER_GPU * g * activation_bytes(model) / 1e9
    edges = [(f"b{k}", f"b{k + 1}", traffic) for k in range(g - 1)]
    training = Training(activation_bytes(model), MICRO_BATCHES_PER_GPU * g)
    return PartitionInstance("decision", clusters, links, vertices, edges, training=training)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=HERE / "runs")
    parser.add_argument("--sample", type=int, default=40)
    args = parser.parse_args()
    sources = {
        "testbed (Fig. 9)": (spiderflow_testbed(0), args.runs / "fig9" / "spiderflow+s0"),
        "scale:8 (Fig. 12)": (spiderflow_scale(8), args.runs / "fig12" / "c8" / "spiderflow+s0"),
    }
    rows, data = [], {}
    for label, (mc, folder) in sources.items():
        net, state = Network.of(mc), FreeGpus(mc)
        times: dict[str, list[float]] = {"greedy": [], "genetic": [], "hilp": []}
        steps: dict[str, list[float]] = {"greedy": [], "genetic": []}
        sizes = []
        for record in _decisions(folder, args.sample):
            model, gpus = CATALOG[record["model"]], _gpus(state, record)
            sizes.append(len(gpus))
            for key, solver, options in (
                ("greedy", "partition/greedy-lowcut", {}),
                ("genetic", "partition/genetic", GENETIC_OPTIONS),
            ):
                t0 = time.perf_counter()
                plan = tpa_plan(model, gpus, net, solver, seed=0, options=options)
                times[key].append(time.perf_counter() - t0)
                steps[key].append(plan.time.step_s)
            instance = _heuristic_ilp_instance(record, state, net)
            t0 = time.perf_counter()
            result = get_solver("partition/heuristic-ilp").solve(instance, time_limit=30, seed=0)
            times["hilp"].append(time.perf_counter() - t0)
            assert result.solution is not None, result.message
        ratio = np.asarray(steps["genetic"]) / np.asarray(steps["greedy"])
        data[label] = {"gpus": sizes, "times_s": times, "steps_s": steps}
        rows.append(
            [
                label,
                str(len(sizes)),
                f"{min(sizes)}-{max(sizes)}",
                *(
                    f"{1e3 * np.median(times[k]):.3g} / {1e3 * max(times[k]):.3g}"
                    for k in ("greedy", "genetic", "hilp")
                ),
                f"{ratio.mean():.3f} (worst {ratio.max():.3f})",
            ]
        )
    table = markdown_table(
        [
            "decisions from",
            "decisions",
            "GPUs",
            "TPA greedy-lowcut (ms, median / max)",
            "TPA genetic (ms)",
            "heuristic-ilp (ms)",
            "step genetic / greedy",
        ],
        rows,
    )
    dump("tpa_choice.json", {"decisions": data, "environment": environment()})
    text = f"""# The simulator's TPA: greedy-lowcut, genetic and heuristic-ilp per decision

    python benchmarks/crosscluster/tpa_choice.py --sample {args.sample}

Decisions replayed from the `spiderflow` runs of `fig9.py` and `fig12.py` (jobs of several GPUs
on several nodes; their clusters and nodes as SpinSearch chose them). TPA prices every pipeline
depth (a partition per depth, at both levels); `heuristic-ilp` is one greedy-lowcut cut of the
job as a chain of one-GPU blocks plus a `parallelconfig/mip` (HiGHS) per cluster. Wall times on
a 2-core VM shared with other work ({environment()["date"]}).

{table}
"""
    (RESULTS / "tpa_choice.md").write_text(text, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
