"""The online calls of the fallback: each staged request body sent as it was staged.

One caller per provider (``claude_caller``, ``gemini_caller``, the ``online`` column of
``_providers.PROVIDERS``): the body of a key's staged batch line (its ``request``) is POSTed
unchanged to the model's online method on Vertex, so whatever the batch accepts the
fallback accepts, and the answer is the provider's JSON as a batch row holds it:

    anthropic   AnthropicVertex.post (the SDK's raw-body path) to
                projects/P/locations/L/publishers/anthropic/models/M:rawPredict -> the message
    google      google-auth's AuthorizedSession to
                projects/P/locations/L/publishers/google/models/M:generateContent
                -> the GenerateContentResponse, in its camelCase wire form, asked at the
                run's price tier by its header (``_vertex.tiers``)

Neither SDK's typed call is used: a typed call refuses what its signature or model lacks
(``temperature`` as a keyword in some anthropic versions, ``anthropic_beta``, a Gemini field
staged under its wire name) before anything is sent. Both paths run inside ``quiet_requests``,
so no DEBUG record of either library holds the body or the answer.

The two clients are the ``Client``'s (``OnlineClients``, on its ``Cloud``): handed in by the
caller (``Client(anthropic_vertex=..., google_session=...)``) or built on first use, kept for
every step and for ``count_tokens`` (``claude_counter``, ``gemini_counter``: the table's
``counter`` column, which ``_plans.count_tokens`` runs), and closed with the ``Client``.

What the service says (an HTTP status, or a transport failure once retries are spent) is the
key's answer (``from_service``); any other exception is a bug in building the call and
propagates.
"""

from __future__ import annotations

import json
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions

from .._errors import InvalidRequestError
from .._lifecycle import closed_error
from .._observe.sdk_logs import quiet_requests
from .._retry import is_transient_call_error
from .._rules import is_loopback
from .tiers import FLEX_TIMEOUT, tier_headers

if TYPE_CHECKING:
    from anthropic import AnthropicVertex
    from google.auth.transport.requests import AuthorizedSession

__all__ = [
    "CLAUDE_COUNTED",
    "GEMINI_COUNTED",
    "Caller",
    "MalformedAnswer",
    "OnlineClients",
    "chat_caller",
    "chat_counter",
    "claude_caller",
    "claude_counter",
    "from_service",
    "gemini_caller",
    "gemini_counter",
    "gemini_post",
    "status_code",
]

# The longest one online call may take: a long answer is generated whole before it is sent
# (the anthropic SDK's own default; RetryPolicy.timeout, a minute, is for job control calls).
CALL_TIMEOUT = 600.0
_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# The connections a session vertexbatch builds keeps per host: one per call in flight up to this
# (requests keeps 10 by default; a connection is only opened when a call needs one).
_POOL = 64
_LOCAL_TOKEN = "local-stack"  # the local stack takes any bearer token


class OnlineClients:
    """The online clients of one ``Client``: the caller's, or built on first use and kept.

    ``claude()`` is an ``anthropic.AnthropicVertex``, ``gemini()`` a google-auth
    ``AuthorizedSession``; both call ``base_url``, the Vertex endpoint's (the jobs client's:
    ``_hosts.vertex_host`` of the location unless the caller gave another), so ``us`` and
    ``eu`` reach their ``.rep.`` host. The fallback
    and ``count_tokens`` share them, from any thread. What was built here is closed by
    ``close()``; what the caller handed in never is (the caller owns it). On the local stack
    (a loopback endpoint, the rule of ``_rules.is_loopback``) the built ones send a fixed
    token instead of application default credentials.
    """

    def __init__(
        self,
        project: str,
        location: str,
        endpoint: str,
        *,
        anthropic_vertex: AnthropicVertex | None = None,
        google_session: AuthorizedSession | None = None,
    ) -> None:
        self.project = project
        self.location = location
        # A REST client's endpoint is a host (Google Cloud: https) or, given as such, a URL.
        self.base_url = endpoint if "://" in endpoint else f"https://{endpoint}"
        self._local = is_loopback(self.base_url)
        self._lock = threading.Lock()
        self._claude = anthropic_vertex
        self._session = google_session
        self._built: list[Callable[[], None]] = []
        self._closed = False
        # A client dropped unclosed frees its connections as urllib3's pools do (anthropic's
        # httpx client would leave its sockets to the garbage collector, which warns).
        weakref.finalize(self, _close_all, self._built)

    def claude(self) -> AnthropicVertex:
        """The ``AnthropicVertex`` of Claude's online and count-tokens calls.

        Raises:
            RuntimeError: the ``Client`` is closed.
        """
        with self._lock:
            if self._closed:
                raise closed_error()
            if self._claude is None:
                self._claude = self._build_claude()
                self._built.append(self._claude.close)
            return self._claude

    def gemini(self) -> AuthorizedSession:
        """The ``AuthorizedSession`` of Gemini's online and count-tokens calls.

        Raises:
            RuntimeError: the ``Client`` is closed.
        """
        with self._lock:
            if self._closed:
                raise closed_error()
            if self._session is None:
                self._session = self._build_session()
                self._built.append(self._session.close)
            return self._session

    def close(self) -> None:
        """Close the clients built here (none the caller handed in); from now on neither is
        given out. Closing again does nothing."""
        with self._lock:
            self._closed = True
            _close_all(self._built)

    def _build_claude(self) -> AnthropicVertex:
        from anthropic import AnthropicVertex

        # The base URL is always the jobs client's (``_hosts.vertex_host`` of the location, or
        # the endpoint given), never the SDK's own choice nor ANTHROPIC_VERTEX_BASE_URL: batch,
        # fallback and count-tokens reach one host.
        return AnthropicVertex(
            region=self.location,
            project_id=self.project,
            access_token=_LOCAL_TOKEN if self._local else None,
            base_url=f"{self.base_url}/v1",
            max_retries=0,  # the client's RetryPolicy retries each call
        )

    def _build_session(self) -> AuthorizedSession:
        import requests
        from google.auth.transport.requests import AuthorizedSession

        if self._local:
            from google.oauth2.credentials import Credentials

            credentials: Any = Credentials(token=_LOCAL_TOKEN)  # type: ignore[no-untyped-call]
        else:
            import google.auth

            credentials, _ = google.auth.default(scopes=[_SCOPE])
        session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
        adapter = requests.adapters.HTTPAdapter(pool_maxsize=_POOL)
        session.mount("https://", adapter)
        session.mount("http://", adapter)
        return session


def _close_all(closers: list[Callable[[], None]]) -> None:
    """Run and forget each closer (the list is emptied: a second call closes nothing)."""
    while closers:
        closers.pop()()


def gemini_post(
    online: OnlineClients,
    model: str,
    method: str,
    body: Mapping[str, Any],
    tier: str = "standard",
) -> dict[str, Any]:
    """POST ``body`` to a Gemini model's ``method`` (``generateContent``, ``countTokens``) on
    Vertex through the session, at price ``tier`` (its headers: ``_vertex.tiers``), and return
    the answer's JSON object.

    Raises:
        GoogleAPICallError: the service answered 4xx or 5xx.
        MalformedAnswer: it answered 2xx with something not a JSON object.
    """
    url = (
        f"{online.base_url}/v1/projects/{online.project}/locations/{online.location}/publishers/"
        f"google/models/{model}:{method}"
    )
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    with quiet_requests():
        response = online.gemini().post(
            url,
            data=data.encode("utf-8"),
            headers={"Content-Type": "application/json", **tier_headers(tier)},
            timeout=FLEX_TIMEOUT if tier == "flex" else CALL_TIMEOUT,
        )
    if response.status_code >= 400:
        raise api_exceptions.from_http_response(response)  # type: ignore[no-untyped-call]
    try:
        answer = response.json()
    except ValueError:
        raise MalformedAnswer("the online answer is not JSON") from None
    return _json_object(answer)


class MalformedAnswer(Exception):
    """The service answered 2xx with something that is not a JSON object (no content kept)."""


def from_service(exc: BaseException) -> bool:
    """Whether a failed online call failed at the service: an HTTP status it answered, or a
    transport failure (retried first). Anything else is a local bug and must propagate."""
    if isinstance(exc, api_exceptions.GoogleAPICallError | MalformedAnswer):
        return True
    # Only the Claude caller imports anthropic: an error of a module never imported cannot exist.
    anthropic = sys.modules.get("anthropic")
    if anthropic is not None and isinstance(exc, anthropic.APIStatusError):
        return True
    return is_transient_call_error(exc)


def status_code(exc: BaseException) -> int:
    """The HTTP status of a service failure (anthropic ``status_code``, google ``code``); 0 for
    a transport failure or a malformed answer."""
    for attribute in ("status_code", "code"):
        value = getattr(exc, attribute, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer("the online answer is not a JSON object")
    return value


@dataclass(slots=True)
class Caller:
    """One provider's online method, open for a fallback step: ``call(body)`` sends one staged
    request body and returns the answer's JSON; ``close()`` ends the step (the clients stay
    open: they are the ``Client``'s, closed with it)."""

    call: Callable[[dict[str, Any]], dict[str, Any]]
    close: Callable[[], None]


def _kept() -> None:
    """A step's end: nothing to close (the clients are the ``Client``'s)."""


def claude_caller(
    online: OnlineClients, model: str, concurrency: int, tier: str = "standard"
) -> Caller:
    """Claude's online method: the staged body POSTed to ``rawPredict`` (Standard PayGo only:
    ``_vertex.tiers.check_tier`` refuses another tier before a run starts)."""
    if tier != "standard":
        raise ValueError(f"Claude's online calls are Standard PayGo only, not {tier!r}")
    vertex = online.claude()
    path = (
        f"/projects/{online.project}/locations/{online.location}/publishers/anthropic/models/"
        f"{model}:rawPredict"
    )

    def call(body: dict[str, Any]) -> dict[str, Any]:
        with quiet_requests():
            answer = vertex.post(path, body=body, cast_to=object)
        return _json_object(answer)

    return Caller(call, _kept)


def gemini_caller(
    online: OnlineClients, model: str, concurrency: int, tier: str = "standard"
) -> Caller:
    """Gemini's online method: the staged body POSTed to ``generateContent`` at ``tier``."""
    online.gemini()  # a closed client refuses the step here, before any call

    def call(body: dict[str, Any]) -> dict[str, Any]:
        return gemini_post(online, model, "generateContent", body, tier)

    return Caller(call, _kept)


# The Messages parameters count_tokens takes; the others (max_tokens, temperature, ...) do not
# change the input.
CLAUDE_COUNTED = ("messages", "system", "tools", "tool_choice", "thinking")
# The fields of a staged Gemini body countTokens takes (its CountTokensRequest).
GEMINI_COUNTED = ("contents", "systemInstruction", "tools", "generationConfig")


def claude_counter(online: OnlineClients, model: str) -> Callable[[Mapping[str, Any]], int]:
    """Claude's count: ``AnthropicVertex.messages.count_tokens`` on a staged body's counted
    parameters."""
    api = online.claude()

    def one(body: Mapping[str, Any]) -> int:
        params = {k: v for k, v in body.items() if k in CLAUDE_COUNTED}
        with quiet_requests():
            return int(api.messages.count_tokens(model=model, **params).input_tokens)

    return one


def gemini_counter(online: OnlineClients, model: str) -> Callable[[Mapping[str, Any]], int]:
    """Gemini's count: a staged body's counted fields POSTed to ``countTokens``."""
    online.gemini()  # a closed client refuses the count here, before any call

    def one(body: Mapping[str, Any]) -> int:
        counted = {k: v for k, v in body.items() if k in GEMINI_COUNTED}
        answer = gemini_post(online, model, "countTokens", counted)
        return int(answer.get("totalTokens") or 0)

    return one


def chat_caller(
    online: OnlineClients, model: str, concurrency: int, tier: str = "standard"
) -> Caller:
    """The open models' online method: none yet. Vertex serves them online through an
    OpenAI-compatible endpoint vertexbatch does not call, so a run's online fallback is refused
    here, before any call, naming the lane."""
    raise InvalidRequestError(
        f"model {model!r}: the open-model (chat) lane has no online fallback in vertexbatch; "
        "run it without a deadline fallback, or read the run's results as they stand",
        field="fallback_tier",
    )


def chat_counter(online: OnlineClients, model: str) -> Callable[[Mapping[str, Any]], int]:
    """The open models' count: none. No page we read documents a count-tokens call for
    Vertex's managed open models, so ``count_tokens=True`` is refused for the lane."""
    raise InvalidRequestError(
        f"model {model!r}: count_tokens=True is not available for open models (no count-tokens "
        "call is documented for them on Vertex); plan without it to estimate the input tokens",
        field="count_tokens",
    )
