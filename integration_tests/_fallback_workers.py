"""Code run in child processes by test_fallback_claim.py (started by
``tests.helpers.child_processes``, so it must be importable)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from ._workers import client


def advance_past_deadline(endpoints: dict[str, str], run_id: str, barrier: Any, out: Any) -> None:
    """With siblings, advance one run past its deadline with the online fallback until done.

    Reports the outcomes of its first step as soon as it ends, then the keys the run's results
    yield.
    """
    run = client(endpoints).open_run(run_id)
    deadline = datetime.now(UTC) - timedelta(seconds=1)
    barrier.wait(timeout=120)
    try:
        summary = run.advance(deadline=deadline, fallback="online")
        out.put(("first", dict(summary.outcomes)))
        for _ in range(300):
            if summary.done:
                break
            time.sleep(0.1)  # another process is answering a shard: look again shortly
            summary = run.advance(deadline=deadline, fallback="online")
        out.put(("ok", {"keys": [r.key for r in run.results()]}))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def advance_online_once(endpoints: dict[str, str], run_id: str, concurrency: int) -> None:
    """Advance one run past its deadline with the online fallback, once (the test kills it)."""
    deadline = datetime.now(UTC) - timedelta(seconds=1)
    run = client(endpoints).open_run(run_id)
    run.advance(deadline=deadline, fallback="online", online_concurrency=concurrency)
