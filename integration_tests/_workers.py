"""Code run in child processes by the integration tests (spawned, so it must be importable)."""

from __future__ import annotations

import os
from typing import Any

import vertexbatch as vb

MODEL = "claude-opus-5-5@default"


def requests(n: int, size: int = 40) -> list[vb.ClaudeRequest]:
    filler = "x" * size
    return [
        vb.ClaudeRequest(
            f"key-{i}",
            {"max_tokens": 64, "messages": [{"role": "user", "content": f"Item {i}: {filler}"}]},
        )
        for i in range(n)
    ]


def client(endpoints: dict[str, str]) -> vb.Client:
    return vb.Client.for_endpoints(
        vertex_endpoint=endpoints["vertex"],
        storage_endpoint=endpoints["storage"],
        project=endpoints["project"],
        location=endpoints["location"],
        bucket=endpoints["bucket"],
        prefix="jobs",
        retry=vb.RetryPolicy.no_wait(attempts=20),
    )


def submit_after_barrier(
    endpoints: dict[str, str], submission_id: str, barrier: Any, out: Any
) -> None:
    """Wait for every sibling, then submit the same id and rows; report the job name."""
    c = client(endpoints)
    rows = requests(20)
    barrier.wait(timeout=60)
    try:
        out.put(("ok", c.submit_claude(submission_id, MODEL, rows).name))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def submit_and_die_before_record(endpoints: dict[str, str], submission_id: str) -> None:
    """Submit, but die (as a killed task would) at the moment the job record is written."""
    from vertexbatch import _staging

    real = _staging.Staging.create_json

    def create_json(self: _staging.Staging, name: str, value: Any) -> bool:
        if name.endswith("/job.json"):
            os._exit(9)
        return real(self, name, value)

    _staging.Staging.create_json = create_json  # type: ignore[method-assign]
    client(endpoints).submit_claude(submission_id, MODEL, requests(5))


def advance_many(endpoints: dict[str, str], run_id: str, barrier: Any, out: Any) -> None:
    """Advance the same run in a loop alongside a sibling, then report its results."""
    run = client(endpoints).open_run(run_id)
    barrier.wait(timeout=60)
    try:
        for _ in range(400):
            if run.advance().done:
                break
        out.put(("ok", {r.key: r.outcome for r in run.results()}))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def advance_and_die_in_resubmit(endpoints: dict[str, str], run_id: str) -> None:
    """Advance, but die right after staging a resubmission, before its job is created."""
    from vertexbatch import _identity

    def submit(*args: Any, **kwargs: Any) -> Any:
        os._exit(9)

    _identity.submit = submit  # type: ignore[assignment]
    import vertexbatch._client as client_module

    client_module.submit = submit  # type: ignore[attr-defined]
    client(endpoints).open_run(run_id).advance()
