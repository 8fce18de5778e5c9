"""The online clients are injectable, as the Vertex and storage clients are: an
``AnthropicVertex`` and an ``AuthorizedSession`` handed to ``Client`` carry the online fallback
and ``count_tokens``, and closing the client leaves every injected client open."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2 as httpx
import pytest
from anthropic import AnthropicVertex
from google.auth.transport.requests import AuthorizedSession
from google.cloud import aiplatform_v1, storage
from google.cloud.aiplatform_v1.services.job_service.transports.rest import (
    JobServiceRestTransport,
)
from google.oauth2.credentials import Credentials

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, claude_request
from vertexbatch.emulator import LocalStack


class CountingSession(AuthorizedSession):
    """An ``AuthorizedSession`` that keeps each request's URL path and JSON body, and its
    closes."""

    def __init__(self) -> None:
        super().__init__(Credentials(token="local-stack"))  # type: ignore[no-untyped-call]
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.closes = 0

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.sent.append((url.rsplit("/", 1)[1], json.loads(kwargs["data"])))
        return super().request(method, url, *args, **kwargs)

    def close(self) -> None:
        self.closes += 1
        super().close()


class Storage(storage.Client):  # type: ignore[misc]
    """A storage client that counts its closes."""

    closes = 0

    def close(self) -> None:
        self.closes += 1
        super().close()


class Transport(JobServiceRestTransport):  # type: ignore[misc]
    """Vertex's REST transport, counting its closes."""

    closes = 0

    def close(self) -> None:
        self.closes += 1
        super().close()


@dataclass
class Injected:
    """The clients a test hands to ``vb.Client``, and what they saw."""

    session: CountingSession
    anthropic: AnthropicVertex
    storage: Storage
    transport: Transport
    claude_paths: list[str] = field(default_factory=list)


@pytest.fixture
def injected(stack: LocalStack, bucket: str) -> Iterator[Injected]:
    """Every client of a ``vb.Client`` on the stack, built by the test (which closes them)."""
    from google.auth.credentials import AnonymousCredentials

    anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]
    paths: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda r: paths.append(r.url.path)]})
    clients = Injected(
        session=CountingSession(),
        anthropic=AnthropicVertex(
            region=stack.location,
            project_id=stack.project,
            access_token="local-stack",
            base_url=f"{stack.vertex_endpoint}/v1",
            max_retries=0,
            http_client=http,  # type: ignore[arg-type]
        ),
        storage=Storage(
            project=stack.project,
            credentials=anonymous,
            client_options={"api_endpoint": stack.storage_endpoint},
        ),
        transport=Transport(host=stack.vertex_endpoint, credentials=anonymous),
        claude_paths=paths,
    )
    stack.create_bucket(bucket)
    yield clients
    clients.session.close()
    clients.anthropic.close()
    clients.storage.close()
    clients.transport.close()


def _client(stack: LocalStack, bucket: str, clients: Injected) -> vb.Client:
    return vb.Client(
        stack.project,
        stack.location,
        bucket,
        prefix="jobs",
        jobs=aiplatform_v1.JobServiceClient(transport=clients.transport),
        storage=clients.storage,
        retry=vb.RetryPolicy.no_wait(),
        anthropic_vertex=clients.anthropic,
        google_session=clients.session,
    )


def test_count_tokens_goes_through_the_injected_clients(
    stack: LocalStack, bucket: str, injected: Injected
) -> None:
    """Both counts go through the clients handed in: Claude's through the ``AnthropicVertex``,
    Gemini's through the session, which posts the staged body's counted fields only (no
    labels) to ``countTokens``."""
    with _client(stack, bucket, injected) as client:
        claude = client.plan_claude("count", CLAUDE, [claude_request("a", "hi")], count_tokens=True)
        gemini = client.plan_gemini(
            "count",
            GEMINI,
            [vb.GeminiRequest("a", "Count me.", {"system_instruction": "Be brief."})],
            count_tokens=True,
        )
    assert claude.tokens_exact and gemini.tokens_exact
    assert [p.rsplit("/", 1)[1] for p in injected.claude_paths] == ["count-tokens:rawPredict"]
    [(method, body)] = injected.session.sent
    assert method == f"{GEMINI}:countTokens"
    assert set(body) == {"contents", "systemInstruction"}  # the staged labels stay out
    assert gemini.input_tokens > 0


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_the_online_fallback_goes_through_the_injected_client(
    stack: LocalStack, bucket: str, injected: Injected, provider: str
) -> None:
    """A run past its deadline answers online through the client handed in, one call per key,
    and the answers are the run's results."""
    stack.faults.hold(display_name="late.s0", state="PENDING")
    with _client(stack, bucket, injected) as client:
        if provider == "anthropic":
            run = client.run_claude(
                "late", CLAUDE, [claude_request(f"k{i}", "hi") for i in range(3)]
            )
        else:
            run = client.run_gemini(
                "late", GEMINI, [vb.GeminiRequest(f"k{i}", "hi") for i in range(3)]
            )
        summary = run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
        assert summary.done and summary.outcomes == {"ok": 3}
        assert all(r.ok and r.text for r in run.results())
    if provider == "anthropic":
        online = [p for p in injected.claude_paths if p.endswith(f"{CLAUDE}:rawPredict")]
        assert len(online) == 3 and injected.session.sent == []
    else:
        methods = [method for method, _ in injected.session.sent]
        assert methods == [f"{GEMINI}:generateContent"] * 3 and injected.claude_paths == []


def test_closing_the_client_leaves_injected_clients_open(
    stack: LocalStack, bucket: str, injected: Injected
) -> None:
    """``close()`` (twice) closes none of the clients the caller handed in, used or not: the
    caller owns them, and they go on working."""
    client = _client(stack, bucket, injected)
    client.plan_claude("used", CLAUDE, [claude_request("a", "hi")], count_tokens=True)
    client.plan_gemini("used", GEMINI, [vb.GeminiRequest("a", "hi")], count_tokens=True)
    client.close()
    client.close()
    assert injected.session.closes == 0
    assert not injected.anthropic.is_closed()
    assert injected.storage.closes == 0
    assert injected.transport.closes == 0
    with pytest.raises(RuntimeError, match="closed"):
        client.find("used")
    # Still the caller's to use: a new client on the same clients works.
    assert _client(stack, bucket, injected).find("used") is None
