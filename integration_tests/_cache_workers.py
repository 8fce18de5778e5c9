"""Code run in child processes by the answer-cache tests (``tests.helpers.child_processes``:
importable, public API only)."""

from __future__ import annotations

from typing import Any

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request

from ._workers import client


def requests(keys: list[int]) -> list[vb.ClaudeRequest]:
    """The request ``k<i>`` is the same request whichever process sends it."""
    return [claude_request(f"k{i}", f"Cached question {i}.") for i in keys]


def _answered(c: vb.Client, submission_id: str, keys: list[int]) -> dict[str, tuple[str, bool]]:
    """Submit with the cache, wait, read every result (which fills the cache)."""
    job = c.submit_claude(submission_id, CLAUDE, requests(keys), cache=True)
    c.wait(job, timeout=120, floor=0.05, ceiling=0.2)
    return {r.key: (r.text, r.cached) for r in c.results(job)}


def fill_then_read(
    endpoints: dict[str, str], name: str, own: list[int], every: list[int], barrier: Any, out: Any
) -> None:
    """Fill the cache with ``own`` (and, at once with the sibling, a shared id), then — once
    the sibling has filled its part — submit ``every`` request and report what came back."""
    c = client(endpoints)
    try:
        barrier.wait(timeout=60)
        filled = _answered(c, f"fill-{name}", own)
        shared = c.find("fill-shared")
        assert shared is not None
        list(c.results(shared))  # both processes fill from one job at once: create-only
        barrier.wait(timeout=120)
        out.put(("ok", name, filled, _answered(c, f"read-{name}", every)))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", name, f"{type(exc).__name__}: {exc}", {}))
