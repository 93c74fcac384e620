"""The worker process of one benchmark run.

``python -m topoopt.bench.worker SPEC.json OUTCOME.json`` imports the plugins named in the
spec, loads the instance, solves it and writes the outcome atomically: either
``{"result": Result.to_dict() without the solution, "peak_memory_mb": ...}`` or
``{"error": "error" | "memory", "message": ..., "peak_memory_mb": ...}`` when the solve raised.
A crash, a hang or an ``os._exit`` leaves no outcome file; the supervisor
(:mod:`topoopt.bench.supervisor`) turns that into an error record.

The worker exits on its own when its parent dies, so an interrupted benchmark leaves no
orphaned solvers behind.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

EXIT_ORPHANED = 3
"""Exit status of a worker whose parent (the supervisor) died."""


def _exit_when_orphaned(parent: int, interval: float = 0.5) -> None:
    """Start a daemon thread that ends this process when its parent is gone."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="topoopt-orphan-watch", daemon=True).start()


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Solve the run described by ``spec`` (see :meth:`Task.worker_spec`) and return the outcome."""
    try:
        for module in spec["plugins"]:
            importlib.import_module(module)
        import topoopt

        result = topoopt.solve(
            spec["path"],
            spec["solver"],
            backend=spec["backend"],
            time_limit=spec["time_limit"],
            seed=spec["seed"],
            threads=spec["threads"],
            allow_paths=spec.get("allow_paths", []),
        )
    except MemoryError:
        return {"error": "memory", "message": "the solver ran out of memory (MemoryError)"}
    except Exception as exc:
        tail = traceback.format_exc(limit=-3).strip().splitlines()[-6:]
        return {
            "error": "error",
            "message": f"{type(exc).__name__}: {exc}",
            "traceback": "\n".join(tail),
        }
    data = result.to_dict()
    data.pop("solution", None)
    return {"result": data}


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``SPEC.json OUTCOME.json``."""
    from topoopt.bench.records import peak_rss_mb

    spec_file, outcome_file = sys.argv[1:] if argv is None else argv
    _exit_when_orphaned(os.getppid())
    outcome = run(json.loads(Path(spec_file).read_text(encoding="utf-8")))
    outcome["peak_memory_mb"] = peak_rss_mb()
    partial = Path(outcome_file + ".partial")
    partial.write_text(json.dumps(outcome), encoding="utf-8")
    partial.replace(outcome_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
