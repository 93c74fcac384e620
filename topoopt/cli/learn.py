"""``topoopt learn``: train the learned predictors (see ``docs/learn.md``)."""

from __future__ import annotations

import click


@click.group()
def learn() -> None:
    """Train learned models from measurements and traces."""
