"""``Client``: submit, find, status, results and cancel, by submission id."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn, Self, Unpack

from ._bigquery.source import ClaudeRequests, GeminiRequests
from ._cache.submission import cached_status, is_cached_job
from ._cloud import Cloud, build_cloud
from ._config import DEFAULT_PREFIX, client_keywords
from ._errors import job_errors
from ._job.find import find
from ._job.results_pass import results_pass
from ._lanes.chat import ChatLane
from ._lanes.embeddings import EmbeddingsLane
from ._lifecycle import ASYNC_WITH, Lifecycle, endpoint_clients
from ._observe.progress import ProgressCallback
from ._observe.traces import Tracing, traced
from ._operations import plan_with, resubmit_job, run_with, submit
from ._plans.estimate import Plan
from ._retry import RetryPolicy
from ._rules import check_id, check_job
from ._runs.run import Run
from ._runs.start import open_run as load_run
from ._submission.options import PlanKeywords, RunKeywords, SubmitKeywords, SubmitOptions
from ._values import Job, Result, Status
from ._vertex.jobs import status_of
from ._waiting.wait import poll

if TYPE_CHECKING:
    from anthropic import AnthropicVertex
    from google.auth.transport.requests import AuthorizedSession
    from google.cloud import aiplatform_v1, bigquery_storage_v1, storage
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider
    from pydantic import BaseModel

    from ._aio import AsyncClient

__all__ = ["Client"]


def _tracing_of(client: Client) -> Tracing:
    return client._cloud.tracing


class Client(EmbeddingsLane, ChatLane):
    """Vertex AI batch prediction for Claude, Gemini, embeddings and open models, by id.

    Args:
        project: the Google Cloud project that runs the jobs.
        location: a Vertex region (``us-central1``), ``us``, ``eu`` or ``global`` (operations.md).
        bucket: the GCS bucket where inputs, records and outputs live.
        prefix: the folder in the bucket; each id gets ``PREFIX/ID/``.
        jobs: an ``aiplatform_v1.JobServiceClient``; by default a REST client on the location's
            Vertex host with application default credentials (online calls use its endpoint).
        storage: a ``google.cloud.storage.Client``; by default one for ``project``.
        meter_provider, tracer_provider: where metrics and spans go (OpenTelemetry's global).
        retry: how Vertex and GCS calls are retried.
        anthropic_vertex: the ``anthropic.AnthropicVertex`` of Claude's online fallback and
            ``count_tokens``; by default one for ``project`` and ``location`` with application
            default credentials, built when first needed (its ``max_retries`` add to
            ``retry``'s; vertexbatch builds its own with ``max_retries=0``).
        google_session: the google-auth ``AuthorizedSession`` of Gemini's online fallback and
            ``count_tokens``, which POST to the endpoint of ``jobs``; by default one with
            application default credentials, built when first needed. Mount an adapter with a
            ``pool_maxsize`` of at least ``online_concurrency`` on it to keep its connections.
        bigquery_read: the ``BigQueryReadClient`` reading a sink's and a source's tables; by
            default one with application default credentials, built when first needed.

    ``close()`` (or the end of ``with Client(...) as client:``) closes the clients it built,
    never one handed in here: the caller owns those. A closed client refuses every call.
    """

    def __init__(
        self,
        project: str,
        location: str,
        bucket: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        jobs: aiplatform_v1.JobServiceClient | None = None,
        storage: storage.Client | None = None,
        meter_provider: MeterProvider | None = None,
        tracer_provider: TracerProvider | None = None,
        retry: RetryPolicy | None = None,
        anthropic_vertex: AnthropicVertex | None = None,
        google_session: AuthorizedSession | None = None,
        bigquery_read: bigquery_storage_v1.BigQueryReadClient | None = None,
    ) -> None:
        self.project = project
        self.location = location
        self.bucket = bucket
        self.prefix = prefix
        self.retry = retry or RetryPolicy()
        self._life = Lifecycle()  # what it builds here is its own, closed by close()
        self._parts = build_cloud(
            self._life,
            project,
            location,
            bucket,
            prefix,
            self.retry,
            jobs=jobs,
            storage=storage,
            meter_provider=meter_provider,
            tracer_provider=tracer_provider,
            anthropic_vertex=anthropic_vertex,
            google_session=google_session,
            bigquery_read=bigquery_read,
        )

    @property
    def _cloud(self) -> Cloud:
        # Every method (traced ones first, for their span) reaches the cloud here: closed, none.
        self._life.check()
        return self._parts

    def close(self) -> None:
        """Close the clients this client built (Vertex, storage, online) and its ``aio`` pool.

        Clients handed to ``Client(...)`` stay open: their caller owns them. Every call after
        this raises ``RuntimeError``; closing again does nothing.
        """
        self._life.close()

    def __enter__(self) -> Self:
        self._life.check()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ``async with Client(...)``: refused with the right form, not Python's bare protocol error.
    async def __aenter__(self) -> NoReturn:
        raise TypeError(ASYNC_WITH.format(what="vertexbatch.Client", how="an async"))

    async def __aexit__(self, *exc_info: object) -> None:
        return None  # pragma: no cover - __aenter__ always raises

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        meter_provider: MeterProvider | None = None,
        tracer_provider: TracerProvider | None = None,
        retry: RetryPolicy | None = None,
    ) -> Self:
        """A client configured from environment variables, as the command line tool is.

        Reads ``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``, ``VERTEXBATCH_BUCKET`` and
        ``VERTEXBATCH_PREFIX`` (default ``vertexbatch``) from ``env`` (default ``os.environ``);
        when ``VERTEXBATCH_VERTEX_ENDPOINT`` and ``STORAGE_EMULATOR_HOST`` are both set (as
        ``vertexbatch emulator`` prints), the client talks to those endpoints with anonymous
        credentials.

        Raises:
            InvalidRequestError: a required variable is missing, named in the message; only one
                endpoint is set; or an endpoint is not an ``http(s)://`` URL.
        """
        given, endpoints = client_keywords(os.environ if env is None else env, None, retry)
        build = cls.for_endpoints if endpoints else cls
        return build(**given, meter_provider=meter_provider, tracer_provider=tracer_provider)

    @classmethod
    def for_endpoints(
        cls,
        *,
        vertex_endpoint: str,
        storage_endpoint: str,
        project: str,
        location: str,
        bucket: str,
        prefix: str = DEFAULT_PREFIX,
        meter_provider: MeterProvider | None = None,
        tracer_provider: TracerProvider | None = None,
        retry: RetryPolicy | None = None,
        bigquery_storage_endpoint: str | None = None,
    ) -> Self:
        """A client for explicit endpoints with anonymous credentials: the local stack's way in.

        ``vertex_endpoint`` and ``storage_endpoint`` are ``http://host:port`` URLs, such as
        those ``vertexbatch emulator`` prints; ``bigquery_storage_endpoint``, a plaintext gRPC
        ``host:port`` of the Storage Read API (``VERTEXBATCH_BIGQUERY_STORAGE_HOST``).
        """
        jobs, store, read = endpoint_clients(
            vertex_endpoint, storage_endpoint, project, bigquery_storage_endpoint
        )
        client = cls(
            project,
            location,
            bucket,
            prefix=prefix,
            jobs=jobs,
            storage=store,
            meter_provider=meter_provider,
            tracer_provider=tracer_provider,
            retry=retry,
            bigquery_read=read,
        )
        for built in (jobs.transport, store, *([read.transport] if read else [])):
            client._life.own(built.close)  # built here: the client's own, as in __init__
        return client

    @functools.cached_property
    def aio(self) -> AsyncClient:
        """The async view of this client: the same methods, awaitable (``vertexbatch._aio``);
        ``await client.aio.aclose()`` closes the client, as ``close()`` does."""
        from ._aio import AsyncClient  # the one import up (_aio wraps a Client)

        self._life.check()
        return AsyncClient._view_of(self)

    def __repr__(self) -> str:
        where = f"project={self.project!r}, location={self.location!r}, bucket={self.bucket!r}"
        return f"Client({where}, prefix={self.prefix!r})"

    @traced("submit", _tracing_of)
    def submit_claude(
        self,
        id: str,
        model: str,
        requests: ClaudeRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """Submit Claude requests under ``id``; the same id and rows always give the same job.

        ``requests``: any iterable (a generator too: it is streamed to GCS), or a caller's
        table (``BigQuerySource``, docs/bigquery.md). With ``dedupe=True`` equal requests (by
        canonical digest) are staged and paid once, ``results`` giving each of their keys the
        one answer (``Result.shared`` on all but the first). Off by default: identical requests
        may sample several answers (the id with and without it holds other rows if they repeat).

        With ``cache=True`` the answer cache (in the client's bucket, under ``PREFIX/_cache/``)
        is asked first: only the requests it does not hold (entries younger than ``cache_ttl``)
        are staged, and ``results`` yields the others from it (``Result.cached``); when it holds
        them all, no Vertex job is created and the job is named ``cached:ID``. The ok answers of
        a ``cache=True`` submission fill the cache once its results are read to the end of the
        terminal job. Job controls (``labels``, ``kms_key``, ``service_account``): SubmitKeywords.

        Raises:
            InvalidRequestError: a bad id, model, key or request, over Vertex's limits, or the
                id is already claimed for other rows.
        """
        given = SubmitOptions.of("submit_claude", options)
        return submit(self._cloud, id, model, "anthropic", requests, given)

    @traced("submit", _tracing_of)
    def submit_gemini(
        self,
        id: str,
        model: str,
        requests: GeminiRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """Submit Gemini requests under ``id``; see ``submit_claude``."""
        given = SubmitOptions.of("submit_gemini", options)
        return submit(self._cloud, id, model, "google", requests, given)

    @traced("plan", _tracing_of)
    def plan_claude(
        self,
        id: str,
        model: str,
        requests: ClaudeRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """What ``submit_claude`` with these arguments would stage, send and cost.

        Nothing is staged and no job is created. With ``cache=True`` the answer cache is asked
        which requests it holds (``Plan.cached``). Input tokens are estimated, or counted by
        Anthropic's count-tokens endpoint on Vertex with ``count_tokens=True`` (one call per
        line to send). ``prices`` override the shipped table (``vertexbatch.PRICES``).
        ``shard_size`` plans a run (``run_claude``) cut in shards of that many keys.

        Raises:
            InvalidRequestError: what ``submit_claude`` would refuse before staging.
        """
        return plan_with(self._cloud, "plan_claude", id, model, "anthropic", requests, options)

    @traced("plan", _tracing_of)
    def plan_gemini(
        self,
        id: str,
        model: str,
        requests: GeminiRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """What ``submit_gemini`` would do; see ``plan_claude`` (google-genai's
        ``models.count_tokens`` counts with ``count_tokens=True``)."""
        return plan_with(self._cloud, "plan_gemini", id, model, "google", requests, options)

    @traced("find", _tracing_of)
    def find(self, id: str) -> Job | None:
        """The job of a submission id, or ``None``; read-only, never cancels anything."""
        return find(self._cloud.vertex, self._cloud.staging, check_id(id))

    @traced("status", _tracing_of)
    def status(self, job: Job) -> Status:
        """Where the job stands (one Vertex GET).

        Raises:
            InvalidRequestError: ``job`` is not a ``Job`` naming a Vertex batch job.
            JobError: the job does not exist.
        """
        if is_cached_job(job):
            return cached_status(job)
        check_job(job)
        with job_errors(job.name):
            return status_of(self._cloud.vertex.get(job.name))

    def wait(
        self,
        job: Job,
        *,
        deadline: datetime | None = None,
        timeout: float | None = None,
        floor: float = 5.0,
        ceiling: float = 300.0,
        on_progress: Callable[[Status], None] | None = None,
        sleep: Callable[[float], None] | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> Status:
        """Poll ``status`` until the job is terminal and return its final ``Status``.

        Pauses double from ``floor`` to ``ceiling``, jittered, and never outlast the deadline
        (``client.aio.wait`` pauses the same way with ``asyncio.sleep``).

        Args:
            deadline: give up at this moment (timezone-aware).
            timeout: give up after this many seconds (the earlier of the two wins).
            floor / ceiling: the shortest and longest pause between polls, in seconds.
            on_progress: called with every status polled.
            sleep / now: injectable for tests (by default ``time.sleep``, the UTC time now).

        Raises:
            InvalidRequestError: ``job`` is not a ``Job``, the deadline is not a timezone-aware
                ``datetime``, or the timeout, floor or ceiling is not a number of seconds that
                fits (``field`` names which).
            WaitTimeout: the deadline passed, or the job outlived any Vertex job (96 h); it
                carries the last status.
        """
        return poll(
            self.status,
            self._cloud.tracing,
            job,
            deadline=deadline,
            timeout=timeout,
            floor=floor,
            ceiling=ceiling,
            on_progress=on_progress,
            sleep=sleep,
            now=now,
        )

    def results(
        self,
        job: Job,
        *,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> Iterator[Result]:
        """Stream one ``Result`` per key written so far; once terminal, the missing keys too.

        ``schema``: the job's own ``schema=``, its class giving ``Result.parsed`` as instances.
        ``progress``: called with a ``vertexbatch.Progress`` as results are read (their number
        of the job's keys, the output bytes of their total), at most ten times a second.

        Raises:
            InvalidRequestError: a bad ``job`` (not a ``Job`` naming a batch job) or ``schema``.
            JobError: the job does not exist, or its key map or output cannot be read.
        """
        return self._life.guard(results_pass(self._cloud, job, schema, progress))

    @traced("resubmit", _tracing_of)
    def resubmit(
        self, job: Job, *, keys: Iterable[str] | None = None, id: str | None = None
    ) -> Job:
        """Submit some of a job's keys again, read back from its staged input.

        Args:
            job: a job submitted through vertexbatch (its staged input is reused: no payload
                needed).
            keys: the keys to resubmit; by default every retryable and missing key, which
                needs the job to be terminal.
            id: the new submission id; by default derived as ``ID.r1``, ``ID.r2``, ...

        Returns the new job, with the same identity guarantees as ``submit_*``: calling this
        twice with the same arguments returns the same job.

        Raises:
            InvalidRequestError: the job is not terminal (with default keys), a key is not in
                the job, there is nothing to resubmit, or the new id is held by another
                submission (a derived id is only ever used for a resubmission of ``job``).
            JobError: the job's staged input or key map is gone or damaged.
        """
        return resubmit_job(self._cloud, job, keys, id, self.status)

    @traced("run.start", _tracing_of)
    def run_claude(
        self,
        id: str,
        model: str,
        requests: ClaudeRequests,
        **options: Unpack[RunKeywords],
    ) -> Run:
        """Start (or rejoin) a run: shard the requests, stage them, write the ledger, take a step.

        Shards hold at most ``shard_size`` rows and one job's rows and bytes (docs/runs.md);
        ``run.advance()`` then creates jobs, resubmits retryable and missing keys up to
        ``max_attempts`` attempts per key, and finishes shards. The other keywords: as for
        ``submit_claude``, within each shard (a shard the cache answers whole gets no job;
        ``Run.results`` fills the cache from finished shards); job controls on every attempt.
        """
        return run_with(self._cloud, "run_claude", id, model, "anthropic", requests, options)

    @traced("run.start", _tracing_of)
    def run_gemini(
        self,
        id: str,
        model: str,
        requests: GeminiRequests,
        **options: Unpack[RunKeywords],
    ) -> Run:
        """Start (or rejoin) a run of Gemini requests; see ``run_claude``."""
        return run_with(self._cloud, "run_gemini", id, model, "google", requests, options)

    @traced("run.open", _tracing_of)
    def open_run(self, id: str) -> Run:
        """Rebuild a run from GCS alone (its ledger), e.g. in a Cloud Scheduler function."""
        return load_run(self._cloud, id)

    @traced("cancel", _tracing_of)
    def cancel(self, job: Job) -> None:
        """Ask Vertex to cancel the job; asynchronous, and a finished job is not an error.

        Raises:
            InvalidRequestError: ``job`` is not a ``Job`` naming a Vertex batch job.
            JobError: the job does not exist.
        """
        if is_cached_job(job):
            return  # answered from the cache: nothing runs
        check_job(job)
        with job_errors(job.name):
            self._cloud.vertex.cancel(job.name)
