"""A job thread's unexpected error fails the job with Vertex's internal error and logs where it
was raised (files and lines), never its message: it may hold a request's content."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from vertexbatch.emulator._runner import make_runner


class _Store:
    """What the job thread's function uses of a JobStore: whether it closes, and touch."""

    closing = False

    def __init__(self) -> None:
        self.touched: list[dict[str, Any]] = []

    def touch(self, job: Any, **changes: Any) -> None:
        self.touched.append(changes)


class _Job:
    job_id = "42"


class _Failing:
    closed = False

    def run(self) -> None:
        {}["the secret text of a request"]  # the KeyError a bug would raise

    def close(self) -> None:
        self.closed = True


def test_an_internal_error_names_its_line_and_hides_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lifecycle = _Failing()
    store = _Store()
    run = make_runner(lambda: None, lambda store, job: lifecycle)  # type: ignore[arg-type,return-value]
    with caplog.at_level(logging.ERROR, logger="vertexbatch.emulator"):
        run(store, _Job())  # type: ignore[arg-type]
    assert store.touched == [
        {"state": "JOB_STATE_FAILED", "error": (13, "Internal error encountered.")}
    ]
    assert lifecycle.closed
    (message,) = [r.getMessage() for r in caplog.records]
    assert "internal error (KeyError at test_runner_errors.py:" in message
    assert "secret" not in message
