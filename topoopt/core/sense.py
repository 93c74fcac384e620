"""The direction of a family's objective."""

from __future__ import annotations

import math
from enum import Enum


class Sense(str, Enum):
    """Direction of a family's objective."""

    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"

    @property
    def worst(self) -> float:
        """The bound that proves nothing: ``-inf`` when minimising, ``+inf`` when maximising."""
        return -math.inf if self is Sense.MINIMIZE else math.inf
