"""vertexbatch's own calls through the anthropic SDK and google-auth never put request content in
a log record."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI
from vertexbatch.emulator import LocalStack

SECRET = "zqx-secret-prompt-canary"


def _requests(n: int) -> list[vb.ClaudeRequest]:
    return [
        vb.ClaudeRequest(
            f"key-{i}",
            {"max_tokens": 32, "messages": [{"role": "user", "content": f"{SECRET} {i}"}]},
        )
        for i in range(n)
    ]


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Every record of every logger, at DEBUG, as an application logging everything sees."""
    seen: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = seen.append  # type: ignore[method-assign]
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield seen
    root.removeHandler(handler)
    root.setLevel(level)


def _leaked(records: list[logging.LogRecord]) -> list[str]:
    """The loggers of records holding the secret, in their message or any ``extra`` field."""
    return [
        record.name
        for record in records
        if SECRET in record.getMessage() or SECRET in repr(vars(record))
    ]


@pytest.fixture
def google_records(records: list[logging.LogRecord]) -> Iterator[list[logging.LogRecord]]:
    """``records``, with google-auth's DEBUG request logging on (the ``google`` logger
    configured, as google-auth requires before it logs bodies)."""
    google = logging.getLogger("google")
    level, propagate = google.level, google.propagate
    google.setLevel(logging.DEBUG)
    google.propagate = True
    yield records
    google.setLevel(level)
    google.propagate = propagate


def test_the_online_fallback_logs_no_request_text(
    client: vb.Client, stack: LocalStack, records: list[logging.LogRecord]
) -> None:
    stack.faults.hold(display_name="late.s0", state="PENDING")
    run = client.run_claude("late", CLAUDE, _requests(2))
    run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert run.status().done
    assert any(r.name.startswith("anthropic") for r in records)  # the SDK did log, at DEBUG
    assert _leaked(records) == []


def test_the_gemini_online_fallback_logs_no_request_text(
    client: vb.Client, stack: LocalStack, google_records: list[logging.LogRecord]
) -> None:
    """google-auth logs request and answer bodies at DEBUG; not those of the fallback's calls."""
    stack.faults.hold(display_name="late-gemini.s0", state="PENDING")
    requests = [vb.GeminiRequest(f"key-{i}", f"{SECRET} {i}") for i in range(2)]
    run = client.run_gemini("late-gemini", GEMINI, requests)
    stack.reset_calls()
    run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert run.status().done and stack.calls()["generateContent"] == 2
    # google-auth did log bodies at DEBUG (of the GCS calls, which hold no request text).
    assert any(r.name == "google.auth.transport.requests" for r in google_records)
    assert _leaked(google_records) == []


def test_counting_tokens_logs_no_request_text(
    client: vb.Client, records: list[logging.LogRecord]
) -> None:
    client.plan_claude("plan", CLAUDE, _requests(2), count_tokens=True)
    assert any(r.name.startswith("anthropic") for r in records)
    assert _leaked(records) == []


def test_the_callers_own_sdk_calls_log_as_before(
    stack: LocalStack, records: list[logging.LogRecord]
) -> None:
    """The filter drops the request options of vertexbatch's calls only: an application's own
    call through the same SDK still logs them (its choice to log at DEBUG)."""
    from anthropic import AnthropicVertex

    from vertexbatch._observe.sdk_logs import quiet_requests

    with quiet_requests():
        pass  # the filter is installed now
    api = AnthropicVertex(
        region=stack.location,
        project_id=stack.project,
        base_url=f"{stack.vertex_endpoint}/v1",
        access_token="local-stack",
        max_retries=0,
    )
    api.messages.count_tokens(model=CLAUDE, messages=[{"role": "user", "content": SECRET}])
    assert _leaked(records) == ["anthropic._base_client"]


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_staging_and_reading_one_line_log_no_request_or_answer_text(
    client: vb.Client, stack: LocalStack, google_records: list[logging.LogRecord], provider: str
) -> None:
    """A one-line input or output file is one JSON object, which google-auth would log whole if
    it logged GCS bodies: it logs request bodies only when they are JSON (never the uploads'
    multipart or chunk bodies) and no answers of AuthorizedSession calls; this pins that."""
    if provider == "anthropic":
        job = client.submit_claude("oneline", CLAUDE, _requests(1))
    else:
        request = vb.GeminiRequest("key-0", [{"role": "user", "parts": [{"text": f"{SECRET} 0"}]}])
        job = client.submit_gemini("oneline", GEMINI, [request])
    stack.wait_job(job.name)
    (result,) = client.results(job)
    assert result.ok and result.text
    assert any(r.name.startswith("google.auth") for r in google_records)  # it did log, at DEBUG
    assert _leaked(google_records) == []
    assert [r for r in google_records if result.text in repr(vars(r))] == []
