"""Heuristics and enumeration oracles, one subpackage per family."""
