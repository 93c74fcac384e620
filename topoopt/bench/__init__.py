"""Benchmarks: run solvers over instance suites, record every run, report on the records."""
