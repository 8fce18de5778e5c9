"""``Cloud``: the cloud-facing parts a ``Client`` builds once, handed down to the layers above.

Runs, the online fallback and the identity protocol need Vertex, staging, the retry policy and
telemetry, never the ``Client`` itself: they take this one value, so dependencies point one way
(``_client`` → ``_runs`` → ``_job`` → ``_staged`` → ``_gcs``, ``_vertex``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._bigquery.read import BigQueryReader
from ._gcs.staging import Staging
from ._lifecycle import Lifecycle
from ._observe.metrics import Telemetry
from ._observe.traces import Tracing
from ._retry import RetryPolicy
from ._vertex.jobs import Vertex
from ._vertex.online import OnlineClients

if TYPE_CHECKING:
    from anthropic import AnthropicVertex
    from google.auth.transport.requests import AuthorizedSession
    from google.cloud import aiplatform_v1, bigquery_storage_v1, storage
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["Cloud", "build_cloud"]


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
    # The Storage Read API, for BigQuery-sink jobs (its client built at first use).
    bigquery: BigQueryReader | None = None


def build_cloud(
    life: Lifecycle,
    project: str,
    location: str,
    bucket: str,
    prefix: str,
    retry: RetryPolicy,
    *,
    jobs: aiplatform_v1.JobServiceClient | None,
    storage: storage.Client | None,
    meter_provider: MeterProvider | None,
    tracer_provider: TracerProvider | None,
    anthropic_vertex: AnthropicVertex | None,
    google_session: AuthorizedSession | None,
    bigquery_read: bigquery_storage_v1.BigQueryReadClient | None = None,
) -> Cloud:
    """A ``Client``'s parts from its arguments; what is built here (not handed in) is ``life``'s
    to close."""
    vertex = Vertex(life.jobs(jobs, location), project, location, retry)
    online = OnlineClients(
        project,
        location,
        vertex.endpoint,
        anthropic_vertex=anthropic_vertex,
        google_session=google_session,
    )
    life.own(online.close)
    return Cloud(
        vertex=vertex,
        staging=Staging(life.storage(storage, project), bucket, prefix, retry),
        retry=retry,
        telemetry=Telemetry(meter_provider),
        project=project,
        location=location,
        online=online,
        tracing=Tracing(tracer_provider, location),
        bigquery=BigQueryReader(project, retry, life.own, given=bigquery_read),
    )
