"""``Client``: submit, find, status, results and cancel, by submission id."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from ._cache import AnswerCache, check_ttl
from ._cached import (
    CacheFill,
    answer_from_cache,
    cached_status,
    claimed_digests,
    is_cached_job,
)
from ._cloud import Cloud
from ._config import DEFAULT_PREFIX, build_client
from ._dedupe import dedupe as dedupe_lines
from ._errors import InvalidRequestError, job_errors
from ._estimate import Plan, build_plan, submitted_plan
from ._identity import find, held_job, resubmit, stage_and_submit
from ._ledger import MAX_ATTEMPTS, Ledger, Shard, check_requests_fit, check_run_id
from ._lifecycle import Lifecycle
from ._lines import StagedLine, claude_line, gemini_line
from ._manifest import no_rows, resubmit_origin
from ._models import ClaudeRequest, GeminiRequest, Job, Provider, Result, Status
from ._online_call import OnlineClients
from ._prices import Price
from ._results import iter_results
from ._retry import RetryPolicy
from ._rules import check_id, check_job, check_key, check_model, next_attempt_id
from ._run_start import create_run, held_run
from ._run_start import open_run as load_run
from ._runs import DEFAULT_SHARD_SIZE, Run
from ._staging import Staging
from ._telemetry import SILENT, Telemetry
from ._tokens import token_counter
from ._tracing import Tracing, job_attributes, traced
from ._vertex import Vertex, status_of

if TYPE_CHECKING:
    from anthropic import AnthropicVertex
    from google.auth.transport.requests import AuthorizedSession
    from google.cloud import aiplatform_v1, storage
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ._aio import AsyncClient

__all__ = ["Client", "cloud_of", "lifecycle_of"]


def _tracing_of(client: Client) -> Tracing:
    return client._cloud.tracing


class Client:
    """Vertex AI batch prediction for Claude and Gemini, keyed by caller-chosen ids.

    Args:
        project: the Google Cloud project that runs the jobs.
        location: the Vertex region, e.g. ``us-central1`` (Claude batch needs a regional one).
        bucket: the GCS bucket where inputs, records and outputs live.
        prefix: the folder in the bucket; each id gets ``PREFIX/ID/``.
        jobs: an ``aiplatform_v1.JobServiceClient``; by default a REST client on the location's
            regional endpoint with application default credentials.
        storage: a ``google.cloud.storage.Client``; by default one for ``project``.
        meter_provider: where metrics go; by default OpenTelemetry's global provider.
        tracer_provider: where spans go; by default OpenTelemetry's global provider.
        retry: how Vertex and GCS calls are retried.
        anthropic_vertex: the ``anthropic.AnthropicVertex`` of Claude's online fallback and
            ``count_tokens``; by default one for ``project`` and ``location`` with application
            default credentials, built when first needed. Its own ``max_retries`` add to
            ``retry``'s (vertexbatch builds its own with ``max_retries=0``).
        google_session: the google-auth ``AuthorizedSession`` of Gemini's online fallback and
            ``count_tokens``, which POST to the endpoint of ``jobs``; by default one with
            application default credentials, built when first needed. Mount an adapter with a
            ``pool_maxsize`` of at least ``online_concurrency`` on it to keep its connections.

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
    ) -> None:
        self.project = project
        self.location = location
        self.bucket = bucket
        self.prefix = prefix
        self.retry = retry or RetryPolicy()
        self._life = Lifecycle()  # what it builds here is its own, closed by close()
        vertex = Vertex(self._life.jobs(jobs, location), project, location, self.retry)
        online = OnlineClients(
            project,
            location,
            vertex.endpoint,
            anthropic_vertex=anthropic_vertex,
            google_session=google_session,
        )
        self._life.own(online.close)
        self._parts = Cloud(
            vertex=vertex,
            staging=Staging(self._life.storage(storage, project), bucket, prefix, self.retry),
            retry=self.retry,
            telemetry=Telemetry(meter_provider),
            project=project,
            location=location,
            online=online,
            tracing=Tracing(tracer_provider, location),
        )

    @property
    def _cloud(self) -> Cloud:
        # Every method reaches the cloud through here (traced ones first of all, for their
        # span), so a closed client refuses a call before it does anything.
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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

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
        return build_client(
            cls, env, meter_provider=meter_provider, tracer_provider=tracer_provider, retry=retry
        )

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
    ) -> Self:
        """A client for explicit endpoints with anonymous credentials: the local stack's way in.

        ``vertex_endpoint`` and ``storage_endpoint`` are ``http://host:port`` URLs, such as
        those ``vertexbatch emulator`` prints.
        """
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import aiplatform_v1
        from google.cloud import storage as gcs

        anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]
        jobs = aiplatform_v1.JobServiceClient(
            transport="rest",
            credentials=anonymous,
            client_options={"api_endpoint": vertex_endpoint},
        )
        store = gcs.Client(
            project=project,
            credentials=anonymous,
            client_options={"api_endpoint": storage_endpoint},
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
        )
        client._life.own(jobs.transport.close)  # built here: the client's own, as in __init__
        client._life.own(store.close)
        return client

    @functools.cached_property
    def aio(self) -> AsyncClient:
        """The async view of this client: the same methods, awaitable (``vertexbatch._aio``);
        ``await client.aio.aclose()`` closes the client, as ``close()`` does."""
        from ._aio import AsyncClient

        self._life.check()
        return AsyncClient(self)

    def __repr__(self) -> str:
        return (
            f"Client(project={self.project!r}, location={self.location!r}, "
            f"bucket={self.bucket!r}, prefix={self.prefix!r})"
        )

    @traced("submit", _tracing_of)
    def submit_claude(
        self,
        id: str,
        model: str,
        requests: Iterable[ClaudeRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> Job:
        """Submit Claude requests under ``id``; the same id and rows always give the same job.

        ``requests`` may be any iterable, a generator included: it is streamed to GCS.
        With ``dedupe=True`` equal requests (by canonical digest) are staged and paid once, and
        ``results`` gives each of their keys the one answer (``Result.shared`` on all but the
        first). Off by default: identical requests may be meant to sample several answers.
        The same id submitted with and without it holds other rows when requests repeat.

        With ``cache=True`` the answer cache (in the client's bucket, under ``PREFIX/_cache/``)
        is asked first: only the requests it does not hold (entries younger than ``cache_ttl``)
        are staged, and ``results`` yields the others from it (``Result.cached``); when it holds
        them all, no Vertex job is created and the job is named ``cached:ID``. The ok answers of
        a ``cache=True`` submission fill the cache once its results are read to the end of the
        terminal job.

        Raises:
            InvalidRequestError: a bad id, model, key or request, over Vertex's limits, or the
                id is already claimed for other rows.
        """
        return self._submit(
            id, model, "anthropic", requests, claude_line, dedupe=dedupe, cache=cache, ttl=cache_ttl
        )

    @traced("submit", _tracing_of)
    def submit_gemini(
        self,
        id: str,
        model: str,
        requests: Iterable[GeminiRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> Job:
        """Submit Gemini requests under ``id``; see ``submit_claude``."""
        return self._submit(
            id, model, "google", requests, gemini_line, dedupe=dedupe, cache=cache, ttl=cache_ttl
        )

    def _submit(
        self,
        id: str,
        model: str,
        provider: Provider,
        requests: Iterable[ClaudeRequest] | Iterable[GeminiRequest],
        build: Callable[..., StagedLine],
        *,
        dedupe: bool,
        cache: bool,
        ttl: timedelta | None,
    ) -> Job:
        check_id(id)
        check_model(model, provider)
        check_ttl(ttl)
        expected = ClaudeRequest if provider == "anthropic" else GeminiRequest
        lines = _staged_lines(requests, expected, build)
        if dedupe:
            lines = dedupe_lines(lines)
        amend = None
        if cache:
            held, amend = answer_from_cache(self._cloud.staging, id, provider, model, lines, ttl)
            lines = iter(held)
        return stage_and_submit(
            self._cloud.staging,
            self._cloud.vertex,
            self.retry,
            id,
            provider,
            model,
            lines,
            amend=amend,
        )

    @traced("plan", _tracing_of)
    def plan_claude(
        self,
        id: str,
        model: str,
        requests: Iterable[ClaudeRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
        count_tokens: bool = False,
        prices: Iterable[Price] = (),
        shard_size: int | None = None,
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
        return self._plan(
            id,
            model,
            "anthropic",
            requests,
            claude_line,
            dedupe=dedupe,
            cache=cache,
            ttl=cache_ttl,
            count_tokens=count_tokens,
            prices=prices,
            shard_size=shard_size,
        )

    @traced("plan", _tracing_of)
    def plan_gemini(
        self,
        id: str,
        model: str,
        requests: Iterable[GeminiRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
        count_tokens: bool = False,
        prices: Iterable[Price] = (),
        shard_size: int | None = None,
    ) -> Plan:
        """What ``submit_gemini`` would do; see ``plan_claude`` (google-genai's
        ``models.count_tokens`` counts with ``count_tokens=True``)."""
        return self._plan(
            id,
            model,
            "google",
            requests,
            gemini_line,
            dedupe=dedupe,
            cache=cache,
            ttl=cache_ttl,
            count_tokens=count_tokens,
            prices=prices,
            shard_size=shard_size,
        )

    def _plan(
        self,
        id: str,
        model: str,
        provider: Provider,
        requests: Iterable[ClaudeRequest] | Iterable[GeminiRequest],
        build: Callable[..., StagedLine],
        *,
        dedupe: bool,
        cache: bool,
        ttl: timedelta | None,
        count_tokens: bool,
        prices: Iterable[Price],
        shard_size: int | None,
    ) -> Plan:
        check_id(id)
        check_model(model, provider)
        check_ttl(ttl)
        if shard_size is not None and (type(shard_size) is not int or shard_size < 1):
            raise InvalidRequestError(
                f"shard_size must be at least 1, got {shard_size!r}", field="shard_size"
            )
        prices = tuple(prices)
        expected = ClaudeRequest if provider == "anthropic" else GeminiRequest
        # Held: what the id (or run id) already holds is checked against them first.
        held = list(_staged_lines(requests, expected, build))
        if not held:  # as submit and run refuse it, before any cloud call
            raise no_rows(id)
        if shard_size is not None:  # what run_claude / run_gemini refuse before any cloud call
            check_run_id(id)
            # MAX_ATTEMPTS: the most digits a run's attempts take in its ledger.
            check_requests_fit(id, provider, model, MAX_ATTEMPTS, len(held), shard_size)
        cloud = self._cloud
        if shard_size is None:  # what the id already holds: a submit would return its job
            found = held_job(
                cloud.staging, cloud.vertex, id, provider, model, held, dedupe=dedupe, cache=cache
            )
            if found is not None:
                job, cached = found
                return submitted_plan(provider, model, held, job.name, cached, prices)
        else:  # what the run id already holds: starting these would rejoin it, or be refused
            run = held_run(
                cloud, id, provider, model, held, shard_size=shard_size, dedupe=dedupe, cache=cache
            )
            if run is not None:
                return submitted_plan(
                    provider, model, held, f"run:{id}", run[1], prices, said=_rejoined(run)
                )
        count = token_counter(cloud, provider, model) if count_tokens else None
        lookup = None
        claimed = None
        if cache and shard_size is None:  # a submit that stopped before its manifest: its claim
            given = dedupe_lines(iter(held)) if dedupe else iter(held)
            claimed = claimed_digests(cloud.staging, id, given, provider, model)
        if claimed is not None:
            taken = claimed

            def lookup(digests: list[str]) -> set[str]:
                return taken.intersection(digests)

        elif cache:
            answers = AnswerCache(cloud.staging, provider, model, ttl=ttl)

            def lookup(digests: list[str]) -> set[str]:
                return set(answers.lookup(digests))

        return build_plan(
            provider,
            model,
            held,
            dedupe=dedupe,
            lookup=lookup,
            count=count,
            prices=prices,
            shard_size=shard_size,
        )

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

    def results(self, job: Job) -> Iterator[Result]:
        """Stream one ``Result`` per key written so far; once terminal, the missing keys too.

        Raises:
            InvalidRequestError: ``job`` is not a ``Job`` naming a Vertex batch job.
            JobError: the job does not exist, or its key map or output cannot be read.
        """
        cloud = self._cloud
        if not is_cached_job(job):
            check_job(job)
        results = iter_results(
            cloud.vertex,
            cloud.staging,
            job,
            cloud.telemetry,
            fill=CacheFill(cloud.staging, job),
        )
        return self._life.guard(cloud.tracing.passing(results, job_attributes(job)))

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
        if is_cached_job(job):
            raise InvalidRequestError(
                f"id {job.id!r} was answered from the answer cache: every key has an ok "
                "answer, so there is nothing to resubmit",
                field="job",
            )
        check_job(job)
        new_id = check_id(id) if id is not None else next_attempt_id(job.id)
        if keys is None:
            status = self.status(job)
            if not status.terminal:
                raise InvalidRequestError(
                    f"job {job.name} is {status.state}: its missing keys are not known until "
                    "it is terminal; wait for it or pass keys=",
                    field="job",
                )
            # The library's own pass: not the caller's reading, so nothing goes to the metrics
            # (nor to the answer cache), as runs' steps read results silently.
            cloud = self._cloud
            silent = iter_results(cloud.vertex, cloud.staging, job, SILENT)
            wanted = {r.key for r in silent if r.outcome in ("retryable", "missing")}
        else:
            if isinstance(keys, str) or not isinstance(keys, Iterable):
                raise InvalidRequestError(
                    "keys must be an iterable of request keys, not one string", field="keys"
                )
            listed = list(keys)
            if not all(isinstance(key, str) for key in listed):
                raise InvalidRequestError("keys must be strings (request keys)", field="keys")
            wanted = set(listed)
        if not wanted:
            raise InvalidRequestError(f"job {job.name} has no keys to resubmit", field="keys")
        cloud = self._cloud
        return resubmit(
            cloud.staging, cloud.vertex, cloud.retry, job, wanted, new_id, resubmit_origin(job.id)
        )

    @traced("run.start", _tracing_of)
    def run_claude(
        self,
        id: str,
        model: str,
        requests: Iterable[ClaudeRequest],
        *,
        shard_size: int = DEFAULT_SHARD_SIZE,
        max_attempts: int = 3,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> Run:
        """Start (or rejoin) a run: shard the requests, stage them, write the ledger, take a step.

        Shards hold at most ``shard_size`` rows and 1 GB each (Vertex allows 200,000 rows);
        ``run.advance()`` then creates jobs, resubmits retryable and missing keys up to
        ``max_attempts`` attempts per key, and finishes shards. ``dedupe``, ``cache`` and
        ``cache_ttl``: as for ``submit_claude``, within each shard (a shard the cache answers
        whole gets no job; ``Run.results`` fills the cache from finished shards).
        """
        check_model(model, "anthropic")
        lines = _staged_lines(requests, ClaudeRequest, claude_line)
        return create_run(
            self._cloud,
            id,
            "anthropic",
            model,
            lines,
            shard_size=shard_size,
            max_attempts=max_attempts,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=check_ttl(cache_ttl),
            count=len(requests) if isinstance(requests, Sized) else None,
        )

    @traced("run.start", _tracing_of)
    def run_gemini(
        self,
        id: str,
        model: str,
        requests: Iterable[GeminiRequest],
        *,
        shard_size: int = DEFAULT_SHARD_SIZE,
        max_attempts: int = 3,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> Run:
        """Start (or rejoin) a run of Gemini requests; see ``run_claude``."""
        check_model(model, "google")
        lines = _staged_lines(requests, GeminiRequest, gemini_line)
        return create_run(
            self._cloud,
            id,
            "google",
            model,
            lines,
            shard_size=shard_size,
            max_attempts=max_attempts,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=check_ttl(cache_ttl),
            count=len(requests) if isinstance(requests, Sized) else None,
        )

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


def cloud_of(client: Client) -> Cloud:
    """The ``Cloud`` of ``client``, for work that takes one (``vertexbatch doctor``'s checks).

    Raises:
        RuntimeError: the client is closed.
    """
    return client._cloud


def lifecycle_of(client: Client) -> Lifecycle:
    """The ``Lifecycle`` of ``client``: what its views (``client.aio``) close with it."""
    return client._life


def _staged_lines(
    requests: Iterable[Any],
    expected: type[ClaudeRequest] | type[GeminiRequest],
    build: Callable[..., StagedLine],
) -> Iterator[StagedLine]:
    """Validate each request's type and key, then build its line; one request at a time.

    ``requests`` itself is checked now, before any cloud call; its items as they are taken.
    """
    if isinstance(requests, str | bytes | Mapping) or not isinstance(requests, Iterable):
        raise InvalidRequestError(
            f"requests must be an iterable of {expected.__name__}, got {type(requests).__name__}",
            field="requests",
        )
    return _built_lines(requests, expected, build)


def _built_lines(
    requests: Iterable[Any],
    expected: type[ClaudeRequest] | type[GeminiRequest],
    build: Callable[..., StagedLine],
) -> Iterator[StagedLine]:
    from ._importer import FieldTypes

    seen: set[str] = set()
    types = FieldTypes()  # a field's type must not differ between the lines (Vertex's importer)
    for request in requests:
        if not isinstance(request, expected):
            raise InvalidRequestError(
                f"expected {expected.__name__} items, got {type(request).__name__}",
                field="requests",
            )
        check_key(request.key, seen)
        yield build(request, types)


def _rejoined(run: tuple[Ledger, int, list[Shard]]) -> str:
    """What a plan of a run the id already holds says."""
    ledger, _, pending = run
    left = sum(shard.keys for shard in pending)
    return (
        f"run {ledger.id} already holds these requests ({len(ledger.shards)} shards): starting "
        f"it again rejoins it and stages or pays nothing more; {len(pending)} shards "
        f"({left} keys) are not finished yet, and their jobs are paid as the run goes on"
    )
