"""``Cloud``: the cloud-facing parts a ``Client`` builds once, handed down to the layers above.

Runs, the online fallback and the identity protocol need Vertex, staging, the retry policy and
telemetry, never the ``Client`` itself: they take this one value, so dependencies point one way
(``_client`` → ``_runs`` → ``_online`` → identity, staging, Vertex).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._gcs.staging import Staging
from ._online_call import OnlineClients
from ._retry import RetryPolicy
from ._telemetry import Telemetry
from ._tracing import Tracing
from ._vertex import Vertex

__all__ = ["Cloud"]


@dataclass(frozen=True, slots=True)
class Cloud:
    """Vertex job control, GCS staging, the retry policy, metrics, traces and the online
    clients (the fallback's and count-tokens') of one client."""

    vertex: Vertex
    staging: Staging
    retry: RetryPolicy
    telemetry: Telemetry
    project: str
    location: str
    online: OnlineClients
    tracing: Tracing = field(default_factory=Tracing)
