"""How long ``client.aio`` ever holds the event loop: a 5 ms ticker's longest gap.

    python -m benchmarks.run --only stall [--stall-size 20000]

While one coroutine awaits ``submit_claude`` of N requests, ``wait`` and then a full
``results`` pass, another ticks every 5 ms and records the longest time between two ticks.
The stack runs in this process and the measurement in a child process (as the other
benchmarks do), so the gaps are the client's own; the bound (issue 14) is 100 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import vertexbatch as vb

__all__ = ["TARGET_GAP", "Stall", "measure", "render", "run", "stalls"]

TARGET_GAP = 0.100
TICK = 0.005
MODEL = "claude-opus-5-5@default"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Stall:
    """The ticker's longest gap in each phase, and each phase's length, in seconds."""

    n: int
    submit_gap: float
    submit_seconds: float
    results_gap: float
    results_seconds: float
    results: int

    @property
    def gap(self) -> float:
        return max(self.submit_gap, self.results_gap)


class Ticker:
    """A coroutine that wakes every ``TICK`` and keeps the longest gap between two wakes."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.last = time.perf_counter()

    async def _tick(self) -> None:
        self.last = time.perf_counter()
        while True:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            self.longest = max(self.longest, now - self.last)
            self.last = now

    async def during(self, work: Callable[[], Awaitable[T]]) -> tuple[T, float, float]:
        """Await ``work()`` while ticking: its value, the longest gap, and its seconds."""
        self.longest = 0.0
        task = asyncio.ensure_future(self._tick())
        await asyncio.sleep(0)  # the ticker's first wake is measured from here
        began = time.perf_counter()
        try:
            value = await work()
        finally:
            task.cancel()
        ended = time.perf_counter()
        # The gap still open when the work ends counts too (a call that held the loop
        # throughout would otherwise show none).
        longest = max(self.longest, ended - self.last)
        return value, longest, ended - began


def requests(n: int) -> list[vb.ClaudeRequest]:
    """N small Claude requests, built before the clock starts."""
    return [
        vb.ClaudeRequest(
            f"key-{i}",
            {"max_tokens": 32, "messages": [{"role": "user", "content": f"Summarise item {i}."}]},
        )
        for i in range(n)
    ]


async def stalls(client: vb.Client, n: int, id: str = "stall") -> Stall:
    """Submit N requests, wait, and read every result through ``client.aio``, ticking."""
    rows = requests(n)
    ticker = Ticker()
    job, submit_gap, submit_seconds = await ticker.during(
        lambda: client.aio.submit_claude(id, MODEL, rows)
    )
    await client.aio.wait(job, floor=0.05, ceiling=0.5)

    async def read() -> int:
        return sum([1 async for _ in client.aio.results(job)])

    count, results_gap, results_seconds = await ticker.during(read)
    return Stall(n, submit_gap, submit_seconds, results_gap, results_seconds, count)


def measure(n: int) -> Stall:
    """Start a local stack here and measure in a child process talking to its endpoints."""
    from vertexbatch.emulator import LocalStack

    with LocalStack(claude_concurrency=1000) as stack:
        bucket = "stall"
        stack.create_bucket(bucket)
        env = {**os.environ, **stack.environment(bucket, prefix="stall")}
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.loop_stall", str(n)],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    if proc.returncode:
        raise RuntimeError(f"the stall measurement failed:\n{proc.stderr[-3000:]}")
    return Stall(**json.loads(proc.stdout.strip().splitlines()[-1]))


def render(stall: Stall) -> str:
    """One paragraph: the longest gaps against the 100 ms bound."""
    met = "MET" if stall.gap <= TARGET_GAP else "MISS"
    return (
        f"Event loop (client.aio, N={stall.n}, {TICK * 1000:.0f} ms ticker): longest gap "
        f"{stall.submit_gap * 1000:.1f} ms during submit ({stall.submit_seconds:.1f} s), "
        f"{stall.results_gap * 1000:.1f} ms during results ({stall.results} results, "
        f"{stall.results_seconds:.1f} s); target {TARGET_GAP * 1000:.0f} ms: {met}"
    )


def run(n: int) -> str:
    return render(measure(n))


def _child(n: int) -> dict[str, Any]:
    client = vb.Client.from_env()
    return asdict(asyncio.run(stalls(client, n)))


if __name__ == "__main__":
    print(json.dumps(_child(int(sys.argv[1]))))
