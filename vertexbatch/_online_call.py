"""The online calls of the fallback: each staged request body sent as it was staged.

One row per provider (``CALLERS``): the body of a key's staged batch line (its ``request``) is
POSTed unchanged to the model's online method on Vertex, so whatever the batch accepts the
fallback accepts, and the answer is the provider's JSON as a batch row holds it:

    anthropic   AnthropicVertex.post (the SDK's raw-body path) to
                projects/P/locations/L/publishers/anthropic/models/M:rawPredict -> the message
    google      google-auth's AuthorizedSession to
                projects/P/locations/L/publishers/google/models/M:generateContent
                -> the GenerateContentResponse, in its camelCase wire form

Neither SDK's typed call is used: a typed call refuses what its signature or model lacks
(``temperature`` as a keyword in some anthropic versions, ``anthropic_beta``, a Gemini field
staged under its wire name) before anything is sent. Both paths run inside ``quiet_requests``,
so no DEBUG record of either library holds the body or the answer.

What the service says (an HTTP status, or a transport failure once retries are spent) is the
key's answer (``from_service``); any other exception is a bug in building the call and
propagates.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions

from ._retry import is_transient_call_error
from ._sdk_logs import quiet_requests

if TYPE_CHECKING:
    from ._cloud import Cloud

__all__ = [
    "CALLERS",
    "Caller",
    "MalformedAnswer",
    "claude_api",
    "from_service",
    "gemini_api",
    "status_code",
]

# The longest one online call may take: a long answer is generated whole before it is sent
# (the anthropic SDK's own default; RetryPolicy.timeout, a minute, is for job control calls).
CALL_TIMEOUT = 600.0
_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def _is_local(endpoint: str) -> bool:
    return endpoint.startswith("http://")


def claude_api(cloud: Cloud) -> Any:
    """An ``anthropic.AnthropicVertex`` for the cloud's project and location (or local stack)."""
    from anthropic import AnthropicVertex

    endpoint = cloud.vertex.endpoint
    if _is_local(endpoint):
        return AnthropicVertex(
            region=cloud.location,
            project_id=cloud.project,
            access_token="local-stack",
            base_url=f"{endpoint}/v1",
            max_retries=0,
        )
    return AnthropicVertex(region=cloud.location, project_id=cloud.project, max_retries=0)


def gemini_api(cloud: Cloud) -> Any:
    """A google-genai ``Client`` on Vertex for the cloud's project and location (or local stack)."""
    from google import genai
    from google.genai import types

    endpoint = cloud.vertex.endpoint
    if _is_local(endpoint):
        from google.oauth2.credentials import Credentials

        return genai.Client(
            vertexai=True,
            project=cloud.project,
            location=cloud.location,
            credentials=Credentials(token="local-stack"),  # type: ignore[no-untyped-call]
            http_options=types.HttpOptions(base_url=endpoint, api_version="v1"),
        )
    return genai.Client(vertexai=True, project=cloud.project, location=cloud.location)


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
    request body and returns the answer's JSON; ``close()`` frees the connection pool."""

    call: Callable[[dict[str, Any]], dict[str, Any]]
    close: Callable[[], None]


def _claude(cloud: Cloud, model: str, concurrency: int) -> Caller:
    vertex = claude_api(cloud)
    path = (
        f"/projects/{cloud.project}/locations/{cloud.location}/publishers/anthropic/models/"
        f"{model}:rawPredict"
    )

    def call(body: dict[str, Any]) -> dict[str, Any]:
        with quiet_requests():
            answer = vertex.post(path, body=body, cast_to=object)
        return _json_object(answer)

    return Caller(call, vertex.close)


def _gemini(cloud: Cloud, model: str, concurrency: int) -> Caller:
    import requests
    from google.auth.transport.requests import AuthorizedSession

    endpoint = cloud.vertex.endpoint
    if _is_local(endpoint):
        from google.oauth2.credentials import Credentials

        credentials: Any = Credentials(token="local-stack")  # type: ignore[no-untyped-call]
    else:
        import google.auth

        credentials, _ = google.auth.default(scopes=[_SCOPE])
        endpoint = endpoint if endpoint.startswith("https://") else f"https://{endpoint}"
    session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
    # One connection per call in flight (requests keeps 10 per host by default).
    adapter = requests.adapters.HTTPAdapter(pool_maxsize=max(concurrency, 10))
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    url = (
        f"{endpoint}/v1/projects/{cloud.project}/locations/{cloud.location}/publishers/google/"
        f"models/{model}:generateContent"
    )

    def call(body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        with quiet_requests():
            response = session.post(
                url,
                data=data.encode("utf-8"),
                headers={"Content-Type": "application/json"},
                timeout=CALL_TIMEOUT,
            )
        if response.status_code >= 400:
            raise api_exceptions.from_http_response(response)  # type: ignore[no-untyped-call]
        try:
            answer = response.json()
        except ValueError:
            raise MalformedAnswer("the online answer is not JSON") from None
        return _json_object(answer)

    return Caller(call, session.close)


CALLERS: dict[str, Callable[[Cloud, str, int], Caller]] = {
    "anthropic": _claude,
    "google": _gemini,
}
"""The online method of each provider: ``CALLERS[job.provider](cloud, job.model, concurrency)``."""
