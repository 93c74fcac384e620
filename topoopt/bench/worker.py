"""The worker process of benchmark runs.

Two modes, one solve (:func:`run`):

* ``python -m topoopt.bench.worker SPEC.json OUTCOME.json`` (``--isolation process``) imports
  the plugins named in the spec, loads the instance, solves it and writes the outcome
  atomically: either ``{"result": Result.to_dict() without the solution, "peak_memory_mb":
  ...}`` or ``{"error": "error" | "memory", "message": ..., "peak_memory_mb": ...}`` when the
  solve raised. A crash, a hang or an ``os._exit`` leaves no outcome file; the supervisor
  (:mod:`topoopt.bench.supervisor`) turns that into an error record.
* ``python -m topoopt.bench.worker --serve REQUESTS RESPONSES PRELOAD`` (``--isolation
  worker``, the default) is a long-lived worker of :mod:`topoopt.bench.pool`: it imports
  topoopt, the plugins and the solver once (``PRELOAD``, a JSON object), says
  ``{"ready": PID}`` and then answers each request — one spec per line on the file descriptor
  ``REQUESTS`` — with one outcome per line on ``RESPONSES``. Before each run it resets the
  process's peak resident memory (Linux ``/proc/self/clear_refs``), so ``peak_memory_mb`` is
  the peak of that run. The solver's own output goes to the process's standard output and
  error (a log file of the supervisor), never to the protocol's pipes.

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
from typing import IO, Any

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
    """Solve the run described by ``spec`` (see :meth:`Task.worker_spec`) and return the outcome.

    A spec with ``"call": "module:function"`` calls ``function(spec["args"])`` instead, whose
    JSON value is the result (another kind of supervised run, e.g. a simulation of
    :mod:`topoopt.sim.sweep`).
    """
    if "call" in spec:
        module, _, name = spec["call"].partition(":")
        try:
            return {"result": getattr(importlib.import_module(module), name)(spec["args"])}
        except MemoryError:
            return {"error": "memory", "message": "the run ran out of memory (MemoryError)"}
        except Exception as exc:
            tail = traceback.format_exc(limit=-3).strip().splitlines()[-6:]
            message = f"{type(exc).__name__}: {exc}"
            return {"error": "error", "message": message, "traceback": "\n".join(tail)}
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
        from topoopt.core.errors import TopooptError

        tail = traceback.format_exc(limit=-3).strip().splitlines()[-6:]
        return {
            "error": "error",
            "message": f"{type(exc).__name__}: {exc}",
            "traceback": "\n".join(tail),
            # topoopt's own refusal (unsupported instance, bad option, missing backend), not
            # a solver failing half-way: a long-lived worker may take the next run.
            "refused": isinstance(exc, TopooptError),
        }
    data = result.to_dict()
    data.pop("solution", None)
    return {"result": data}


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``SPEC.json OUTCOME.json``, or ``--serve REQUESTS RESPONSES PRELOAD``."""
    from topoopt.bench.records import peak_rss_mb

    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--serve"]:
        requests, responses, preload = args[1:]
        return serve(int(requests), int(responses), json.loads(preload))
    spec_file, outcome_file = args
    _exit_when_orphaned(os.getppid())
    outcome = run(json.loads(Path(spec_file).read_text(encoding="utf-8")))
    outcome["peak_memory_mb"] = peak_rss_mb()
    partial = Path(outcome_file + ".partial")
    partial.write_text(json.dumps(outcome), encoding="utf-8")
    partial.replace(outcome_file)
    return 0


# -- the long-lived worker ----------------------------------------------------------------


def preload(spec: dict[str, Any]) -> None:
    """Import what the runs of one solver need, so that no run pays for it: topoopt, the
    plugins, the solver's module (by resolving its name) and, for a MIP backend, Pyomo and
    the backend's package.

    Best effort: a failure here is left for :func:`run` to report as the run's error, exactly
    as a fresh worker process would.
    """
    try:
        for module in spec.get("plugins", []):
            importlib.import_module(module)
        from topoopt.core.registry import solver_class

        solver_class(spec["solver"])
        backend = spec.get("backend")
        if backend is not None:
            from topoopt.core.backends import BACKENDS

            importlib.import_module("pyomo.environ")
            importlib.import_module(BACKENDS[backend].package)
    except Exception:  # reported by the run itself
        pass


def reset_peak_memory() -> bool:
    """Reset this process's peak resident memory (``VmHWM``) to its current resident memory.

    Linux only (``/proc/self/clear_refs``); returns whether it worked.
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as stream:
            stream.write("5")
    except OSError:
        return False
    return True


def peak_memory_mb() -> float:
    """Peak resident memory of this process (MiB) since the last :func:`reset_peak_memory`
    (``VmHWM``), or over its lifetime where that cannot be read (``ru_maxrss``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    from topoopt.bench.records import peak_rss_mb

    return peak_rss_mb()


def _child_processes() -> bool:
    """Whether this process has child processes (Linux; ``False`` where unknown)."""
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children", encoding="ascii") as stream:
                if stream.read().strip():
                    return True
    except OSError:
        return False
    return False


def _send(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode("utf-8") + b"\n")
    stream.flush()


def serve(requests_fd: int, responses_fd: int, spec: dict[str, Any]) -> int:
    """Answer run requests until the supervisor closes the request pipe.

    Each outcome is that of :func:`run` plus ``peak_memory_mb`` (the peak of this run where
    the peak can be reset, see :func:`reset_peak_memory`) and ``clean``: whether the run left
    no extra thread and no child process behind (a worker that is not clean is replaced).
    """
    _exit_when_orphaned(os.getppid())
    preload(spec)
    requests = os.fdopen(requests_fd, "rb")
    responses = os.fdopen(responses_fd, "wb")
    _send(responses, {"ready": os.getpid()})
    for line in requests:
        threads = threading.active_count()
        reset_peak_memory()
        outcome = run(json.loads(line))
        outcome["peak_memory_mb"] = peak_memory_mb()
        sys.stdout.flush()
        sys.stderr.flush()
        outcome["clean"] = threading.active_count() <= threads and not _child_processes()
        _send(responses, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
