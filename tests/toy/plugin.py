"""Importing this module registers the toy knapsack family (a ``--plugin`` for bench/report)."""

from toy.knapsack import register

register()
