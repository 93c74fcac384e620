"""Write the committed gpuselect suites under ``instances/gpuselect/``.

Usage (from the repository root)::

    python benchmarks/gpuselect/make_instances.py

Suites: ``examples`` (the conformance instances), ``random-small`` (seed 0), ``large-pool``
(1024 GPUs), ``protocol-<cluster>`` (topology-derived model from the paper's Appendix E,
2 scenarios per k — the benchmark script draws the full 50) and ``protocol-measured-<cluster>``
(1 scenario per k; the bottleneck model on the measured tables). The measured tables are not
copied into the files: each names them by data name (``data:hosts/<file>.csv``, see
``docs/gpuselect.md``), looked up in the data folders (``TOPOOPT_DATA``, by default
``shared/data`` beside the repository), so the files load from any folder where the data is
configured. Writing them needs the data (they are checked to load back equal).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import topoopt
from topoopt.core.datapath import DataNotFoundError
from topoopt.gpuselect.generate import (
    CLUSTERS,
    MEASURED,
    examples,
    large_pool,
    measured_bandwidth,
    protocol,
    random_small,
)
from topoopt.gpuselect.instance import GpuSelectInstance

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "instances" / "gpuselect"


def write(suite: str, make: Callable[[], list[GpuSelectInstance]]) -> None:
    folder = OUT / suite
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for inst in make():
        topoopt.save(inst, folder / f"{inst.name}.json")


def write_measured(cluster: str) -> None:
    """``protocol-measured-<cluster>``: each file's model names the tables (data names)."""
    try:
        instances = protocol(seed=0, cluster=cluster, scenarios=1, data_dir=MEASURED)
    except DataNotFoundError as exc:
        print(f"skipped protocol-measured-{cluster}: {exc}")
        return
    folder = OUT / f"protocol-measured-{cluster}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    reference = measured_bandwidth(CLUSTERS[cluster], MEASURED)
    for inst in instances:
        data = {**inst.to_dict(), "bandwidth": reference}
        path = folder / f"{inst.name}.json"
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        assert topoopt.load(path) == inst, path


def main() -> None:
    write("examples", examples)
    write("random-small", lambda: random_small(seed=0))
    write("large-pool", lambda: large_pool(seed=0))
    for cluster in CLUSTERS:
        write(f"protocol-{cluster}", lambda c=cluster: protocol(seed=0, cluster=c, scenarios=2))
        write_measured(cluster)


if __name__ == "__main__":
    main()
