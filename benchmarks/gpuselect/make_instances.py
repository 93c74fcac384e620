"""Write the committed gpuselect suites under ``instances/gpuselect/``.

Usage (from the repository root)::

    python benchmarks/gpuselect/make_instances.py

Suites: ``examples`` (the conformance instances), ``random-small`` (seed 0), ``large-pool``
(1024 GPUs), ``protocol-<cluster>`` (topology-derived model from the paper's Appendix E,
2 scenarios per k — the benchmark script draws the full 50) and ``protocol-measured-<cluster>``
(1 scenario per k; the bottleneck model on the measured tables, referenced by the relative
path ``../../../../shared/data/hosts`` — they load only where ``shared/`` sits beside the
repository).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import topoopt
from topoopt.gpuselect.generate import CLUSTERS, examples, large_pool, protocol, random_small
from topoopt.gpuselect.instance import GpuSelectInstance

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "instances" / "gpuselect"
DATA_FROM_SUITE = "../../../../shared/data/hosts"


def write(suite: str, make: Callable[[], list[GpuSelectInstance]]) -> None:
    folder = OUT / suite
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cwd = Path.cwd()
    os.chdir(folder)  # relative table paths resolve as they will when the files are loaded
    try:
        for inst in make():
            topoopt.save(inst, folder / f"{inst.name}.json")
    finally:
        os.chdir(cwd)


def main() -> None:
    write("examples", examples)
    write("random-small", lambda: random_small(seed=0))
    write("large-pool", lambda: large_pool(seed=0))
    for cluster in CLUSTERS:
        write(f"protocol-{cluster}", lambda c=cluster: protocol(seed=0, cluster=c, scenarios=2))
        if not (ROOT.parent / "shared" / "data" / "hosts").is_dir():
            print(f"skipped protocol-measured-{cluster}: ../shared/data/hosts not found")
            continue
        write(
            f"protocol-measured-{cluster}",
            lambda c=cluster: protocol(seed=0, cluster=c, scenarios=1, data_dir=DATA_FROM_SUITE),
        )


if __name__ == "__main__":
    main()
