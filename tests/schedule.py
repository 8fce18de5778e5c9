"""How the suite's tests are shared among xdist workers (README's `-n 4`): heaviest first, one at
a time.

xdist's "load" scheduler hands each worker a quarter of the first tests in one block. With the
heaviest tests first, that block gave one worker every slow test (46 of them, about 770 s of wall
time between them) while the other three finished and waited: the run's length was that one
worker's. Handing out one test at a time (``--maxschedchunk 1``) lets each idle worker take the
next heaviest, so the slow tests run on every worker at once and the short ones fill in behind.
conftest.py marks the tiers this order reads (``slow``, ``fast``).
"""

from __future__ import annotations

import pytest


def weight(item: pytest.Item) -> int:
    """The order a test runs in: slow ones, then ones that start a server or a process, then
    the fast tier."""
    if item.get_closest_marker("slow") is not None:
        return 0
    return 2 if item.get_closest_marker("fast") is not None else 1


@pytest.hookimpl(trylast=True)  # after conftest.py has marked the fast tier
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A stable sort: the order within each tier stays the files' own.
    items.sort(key=weight)


def pytest_configure(config: pytest.Config) -> None:
    # Only where xdist is loaded and the run did not choose a chunk itself.
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 1
