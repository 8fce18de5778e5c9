"""``client.aio`` never holds the event loop long: a 5,000-request submit and results pass."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from benchmarks.loop_stall import stalls

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_loop_keeps_ticking(client: vb.Client) -> None:
    """A 5 ms ticker sees no long gap while 5,000 requests are submitted and read.

    The bound is generous (the stack shares this process and two cores with other work;
    ``python -m benchmarks.run --only stall`` prints the figure against 100 ms), and relative:
    a call that held the loop would show a gap as long as the call itself. 5,000 requests
    keep each phase well past the 0.1 s floor of the bounds below (so a held loop fails them),
    at a quarter of the 20,000 the benchmark measures by default.
    """
    stall = await stalls(client, 5_000)
    assert stall.results == 5_000
    # A call run on the loop leaves a gap about as long as its phase; a loaded machine's
    # scheduling hiccups stay well under three quarters of it.
    assert stall.gap < 2.0, stall
    assert stall.submit_gap < max(0.1, stall.submit_seconds * 0.75), stall
    assert stall.results_gap < max(0.1, stall.results_seconds * 0.75), stall
