"""Benchmarks: run solvers over instance suites, record every run, report on the records.

* :mod:`~topoopt.bench.runner` — :func:`~topoopt.bench.runner.plan` the runs of a benchmark
  and :func:`~topoopt.bench.runner.run_benchmark` them (resumable);
* :mod:`~topoopt.bench.executors` — where runs execute: this machine or a Dask cluster;
* :mod:`~topoopt.bench.supervisor`, :mod:`~topoopt.bench.pool` and
  :mod:`~topoopt.bench.worker` — runs in worker processes (long-lived ones, or one per run),
  with a hard timeout, a memory limit and error records for every way a solver can fail;
* :mod:`~topoopt.bench.records` — the JSONL record format;
* :mod:`~topoopt.bench.analysis` — pure functions from records to the report's numbers;
* :mod:`~topoopt.bench.sections` — family-specific report sections (``register_section``);
* :mod:`~topoopt.bench.report`, :mod:`~topoopt.bench.document`, :mod:`~topoopt.bench.plots`
  — the Markdown / HTML / PNG report.

The commands ``topoopt bench`` and ``topoopt report`` are in :mod:`topoopt.cli.bench`.

See ``docs/bench.md``.
"""
