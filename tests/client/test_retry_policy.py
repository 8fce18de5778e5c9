"""The retry policy: what is transient, the deadline, one budget per operation, a call timeout."""

from __future__ import annotations

import http.client
import threading
import time

import pytest
import requests
import urllib3
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

import vertexbatch as vb
from vertexbatch._cache.store import storage_errors
from vertexbatch._command.cli_render import ExitCode, describe_error
from vertexbatch._retry import is_transient_call_error, transport_errors
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


@pytest.mark.parametrize(
    "exc",
    [
        requests.exceptions.ChunkedEncodingError("connection cut mid-body"),
        http.client.IncompleteRead(b"part", 10),
        urllib3.exceptions.ProtocolError("Connection aborted."),
        urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out"),  # type: ignore[arg-type]
        requests.exceptions.ReadTimeout("read timed out"),
    ],
)
def test_a_connection_cut_or_stalled_mid_answer_is_transient(exc: BaseException) -> None:
    """What google-cloud-storage's own retry takes as transient (each call passes retry=None,
    so vertexbatch's policy decides)."""
    assert is_transient_call_error(exc)


# One of each transport error, as the libraries raise them.
TRANSPORT: list[BaseException] = [
    ConnectionResetError(104, "Connection reset by peer"),
    TimeoutError("timed out"),
    http.client.IncompleteRead(b"part", 10),
    auth_exceptions.TransportError("token endpoint unreachable"),
    requests.ConnectionError("Connection aborted."),
    requests.exceptions.ReadTimeout("read timed out"),
    requests.exceptions.ChunkedEncodingError("connection cut mid-body"),
    urllib3.exceptions.ProtocolError("Connection aborted."),
    urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out"),  # type: ignore[arg-type]
]


def test_each_transport_error_is_one_to_the_policy_the_cache_and_the_command() -> None:
    """One list of transport errors: each is retried, passed over by a best-effort cache
    write, and the command's "cannot reach Google Cloud" (exit 6)."""
    listed = transport_errors()
    for cls in listed:
        assert any(isinstance(exc, cls) for exc in TRANSPORT), f"no example of {cls}"
    for exc in TRANSPORT:
        assert isinstance(exc, listed), exc
        assert is_transient_call_error(exc), exc
        assert isinstance(exc, storage_errors()), exc
        code, line = describe_error(exc)  # type: ignore[arg-type]
        assert (code, line.split(" (")[0]) == (ExitCode.CLOUD_ERROR, "cannot reach Google Cloud")


@pytest.mark.parametrize(
    "exc", [api_exceptions.PermissionDenied("no"), api_exceptions.NotFound("gone"), ValueError()]
)
def test_what_a_retry_cannot_mend_is_final(exc: BaseException) -> None:
    assert not is_transient_call_error(exc)


def test_no_attempt_starts_past_the_deadline() -> None:
    """Waits of 0.2 s, a deadline of 0.3 s: an attempt whose wait would pass the deadline is
    not made (at most two attempts, each started within it)."""
    policy = vb.RetryPolicy(attempts=10, initial=0.2, maximum=0.2, jitter=0.0, deadline=0.3)
    began = time.monotonic()
    starts: list[float] = []

    def failing() -> None:
        starts.append(time.monotonic() - began)
        raise api_exceptions.ServiceUnavailable("down")

    with pytest.raises(api_exceptions.ServiceUnavailable):
        policy.call("a call", failing)
    assert 1 <= len(starts) <= 2 and all(start <= 0.3 for start in starts), starts


def test_a_submit_lists_within_one_retry_budget(client: vb.Client, stack: LocalStack) -> None:
    """List keeps failing: the create step makes at most ``attempts`` listings, not attempts
    squared (the listing's own retries nested in the create step's)."""
    stack.faults.fail("list", status=503, times=100)
    policy = vb.RetryPolicy.no_wait(attempts=3)
    submitter = stack.client(bucket=client.bucket, prefix="jobs", retry=policy)
    stack.reset_calls()
    with pytest.raises(api_exceptions.ServiceUnavailable):
        submitter.submit_claude("budget", MODEL, [vb.ClaudeRequest("k", _params())])
    assert stack.calls()["list"] == 3
    assert stack.calls().get("create", 0) == 0


def test_a_vertex_call_that_never_answers_times_out_and_is_retried(
    client: vb.Client, stack: LocalStack
) -> None:
    """A get whose answer never comes ends at the policy's timeout, and the retry answers."""
    job = client.submit_claude("stalled", MODEL, [vb.ClaudeRequest("k", _params())])
    policy = vb.RetryPolicy(attempts=3, timeout=1.0, wait=False)
    reader = stack.client(bucket=client.bucket, prefix="jobs", retry=policy)
    stack.faults.block("get", when="before", times=1)  # this get is never answered
    out: dict[str, object] = {}

    def status() -> None:
        try:
            out["status"] = reader.status(job)
        except Exception as exc:  # reported by the assertion below
            out["status"] = exc

    thread = threading.Thread(target=status, daemon=True)
    thread.start()
    thread.join(15)
    stuck = thread.is_alive()
    stack.faults.unblock("get")
    thread.join(10)
    assert not stuck, "status still waiting 15 s after a 1 s timeout"
    assert isinstance(out["status"], vb.Status), out["status"]


def _params() -> dict[str, object]:
    return {"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout", 0),
        ("timeout", -1.0),
        ("timeout", float("nan")),
        ("timeout", float("inf")),
        ("deadline", 0),
        ("initial", -0.5),
        ("jitter", "1"),
        ("attempts", 0),
        ("attempts", True),
        ("attempts", 2.5),
    ],
)
def test_a_policy_no_call_could_be_made_under_is_refused_when_made(
    field: str, value: object
) -> None:
    with pytest.raises(vb.InvalidRequestError, match=f"RetryPolicy.{field} must be") as err:
        vb.RetryPolicy(**{field: value})  # type: ignore[arg-type]
    assert err.value.field == "retry"
