"""Formulations of the placement family: the coarse MIP (eq. 4–10) and the exact MIP."""
