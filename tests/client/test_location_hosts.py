"""Every Vertex call a client builds for itself goes to its location's host (``_hosts``).

The real clients vertexbatch builds on Google Cloud (the jobs client ``Lifecycle.jobs`` makes,
the ``AnthropicVertex`` and ``AuthorizedSession`` of ``OnlineClients``) are driven through the
calls vertexbatch makes with them: a job get and list, Claude's and Gemini's online call and
count-tokens. A recording transport stands where the network would be (requests' ``HTTPAdapter``
for google-auth's sessions, httpx2's ``HTTPTransport`` for anthropic): it keeps each URL and
answers as Vertex would, and application default credentials are a fixed token. ``us`` and
``eu`` must reach ``aiplatform.{us|eu}.rep.googleapis.com``, which the SDKs' own defaults and
vertexbatch's old rule (``us-aiplatform.googleapis.com``, an invalid host) did not all agree on.
Last, a client in ``us`` / ``eu`` submits, reads and counts tokens on the local stack.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import google.auth
import httpx2
import pytest
import requests
from google.auth import credentials as google_credentials

from tests.helpers import CLAUDE, GEMINI, claude_request, client_in, gemini_requests
from vertexbatch._lifecycle import Lifecycle
from vertexbatch._retry import RetryPolicy
from vertexbatch._vertex.jobs import Vertex
from vertexbatch._vertex.online import (
    OnlineClients,
    claude_caller,
    claude_counter,
    gemini_caller,
    gemini_counter,
)
from vertexbatch.emulator import LocalStack

PROJECT = "my-project"
JOB = "projects/{project}/locations/{location}/batchPredictionJobs/123"


class _Token(google_credentials.Credentials):
    """Application default credentials that hold a token and never call Google to refresh."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.token = "token"

    def refresh(self, request: Any) -> None:
        self.token = "token"


def _answer(url: str, location: str) -> dict[str, Any]:
    """What Vertex answers to the call at ``url`` (enough for vertexbatch to read it)."""
    path = urlsplit(url).path
    if path.endswith(":countTokens"):
        return {"totalTokens": 7}
    if path.endswith("count-tokens:rawPredict"):
        return {"input_tokens": 7}
    if path.endswith(":rawPredict") or path.endswith(":generateContent"):
        return {"answer": "kept whole"}
    if path.endswith("/batchPredictionJobs"):
        return {"batchPredictionJobs": [{"name": JOB.format(project="42", location=location)}]}
    raise AssertionError(f"an unexpected call: {path}")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[str], list[str]]]:
    """(the URLs called, the locations answered for): every HTTP call of google-auth's sessions
    and of anthropic's client is recorded and answered here, none leaves the machine."""
    urls: list[str] = []
    where: list[str] = []

    def send_requests(self: Any, request: requests.PreparedRequest, **kwargs: Any) -> Any:
        urls.append(str(request.url))
        response = requests.Response()
        response.status_code = 200
        response._content = json.dumps(_answer(str(request.url), where[0])).encode()
        response.headers["Content-Type"] = "application/json"
        response.url = str(request.url)
        response.request = request
        response.encoding = "utf-8"
        return response

    def send_httpx(self: Any, request: httpx2.Request) -> httpx2.Response:
        urls.append(str(request.url))
        return httpx2.Response(200, json=_answer(str(request.url), where[0]), request=request)

    monkeypatch.setattr(google.auth, "default", lambda *args, **kwargs: (_Token(), PROJECT))
    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", send_requests)
    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", send_httpx)
    yield urls, where


@pytest.mark.parametrize(
    ("location", "host"),
    [
        ("us", "aiplatform.us.rep.googleapis.com"),
        ("eu", "aiplatform.eu.rep.googleapis.com"),
        ("global", "aiplatform.googleapis.com"),
        ("us-east5", "us-east5-aiplatform.googleapis.com"),
    ],
)
def test_every_call_goes_to_the_locations_host(
    recorded: tuple[list[str], list[str]], location: str, host: str
) -> None:
    urls, where = recorded
    where.append(location)
    life = Lifecycle()
    try:
        vertex = Vertex(life.jobs(None, location), PROJECT, location, RetryPolicy(attempts=1))
        assert vertex.list_one() == JOB.format(project="42", location=location)
        online = OnlineClients(PROJECT, location, vertex.endpoint)
        life.own(online.close)
        messages = [{"role": "user", "content": "hi"}]
        claude_counter(online, "claude-sonnet-4-5")({"messages": messages, "max_tokens": 5})
        gemini_counter(online, "gemini-2.5-flash")({"contents": [{"role": "user"}]})
        claude_caller(online, "claude-sonnet-4-5", 1).call({"messages": messages})
        gemini_caller(online, "gemini-2.5-flash", 1).call({"contents": [{"role": "user"}]})
    finally:
        life.close()
    assert len(urls) == 5
    assert {urlsplit(url).scheme for url in urls} == {"https"}
    assert {urlsplit(url).hostname for url in urls} == {host}
    parent = f"/v1/projects/{PROJECT}/locations/{location}"
    assert all(urlsplit(url).path.startswith(parent) for url in urls), urls


def test_the_anthropic_base_url_variable_does_not_move_claude_off_the_host(
    recorded: tuple[list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """anthropic's own ``ANTHROPIC_VERTEX_BASE_URL`` would send Claude's calls elsewhere than
    the jobs: vertexbatch gives the client its base URL, so the jobs' host wins."""
    urls, where = recorded
    where.append("eu")
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", "https://elsewhere.example.com/v1")
    online = OnlineClients(PROJECT, "eu", "aiplatform.eu.rep.googleapis.com")
    try:
        claude_counter(online, "claude-sonnet-4-5")({"messages": []})
    finally:
        online.close()
    assert [urlsplit(url).hostname for url in urls] == ["aiplatform.eu.rep.googleapis.com"]


@pytest.mark.parametrize("location", ["us", "eu"])
def test_a_client_in_a_multi_region_runs_a_job_and_counts_tokens_on_the_stack(
    stack: LocalStack, bucket: str, location: str
) -> None:
    """On the stack (which serves ``us`` and ``eu``) a client in a multi-region submits, waits,
    reads, and counts tokens: every call names that location."""
    client = client_in(stack, bucket, location)
    with client:
        job = client.submit_gemini("multi", GEMINI, gemini_requests(2))
        assert f"/locations/{location}/batchPredictionJobs/" in job.name
        client.wait(job, floor=0.01, ceiling=0.05)
        assert {r.outcome for r in client.results(job)} == {"ok"}
        plan = client.plan_claude("counted", CLAUDE, [claude_request("k", "hi")], count_tokens=True)
        assert plan.input_tokens > 0
