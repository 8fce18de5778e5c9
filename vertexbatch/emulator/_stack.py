"""LocalStack: fake-gcs-server plus the local Vertex REST service (and, when asked, bqemulator),
started and stopped together."""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import shutil
import socket
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from google.api_core import exceptions as api_exceptions

from vertexbatch import Client, RetryPolicy
from vertexbatch._config import (
    BUCKET,
    DEFAULT_PREFIX,
    LOCATION,
    PREFIX,
    PROJECT,
    STORAGE_ENDPOINT,
    VERTEX_ENDPOINT,
)
from vertexbatch.emulator._bigquery import BigQueryServer, require_bigquery, start_bigquery
from vertexbatch.emulator._bq_run import make_admit, make_lifecycle
from vertexbatch.emulator._catalogue import Catalogue
from vertexbatch.emulator._faults import Faults
from vertexbatch.emulator._gcs import GcsServer, start_gcs
from vertexbatch.emulator._jobs import TERMINAL, JobStore
from vertexbatch.emulator._locations import Locations
from vertexbatch.emulator._options import JobOptions, Timing
from vertexbatch.emulator._runner import make_runner
from vertexbatch.emulator._server import RestServer, Service
from vertexbatch.emulator._stack_bigquery import BIGQUERY_STORAGE_HOST, StackBigQuery
from vertexbatch.emulator._stack_sdk import StackSdk
from vertexbatch.emulator._state import JOBS_FILE

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

__all__ = ["PROJECT_NUMBER", "LocalStack"]

# Job names carry a project number, as Vertex's do; any number is taken as the stack's project.
PROJECT_NUMBER = "123456789012"


class LocalStack(StackSdk, StackBigQuery):
    """A local Vertex AI batch-prediction service backed by a real fake-gcs-server.

    Use it as a context manager; both servers stop on exit, also when the body raises::

        with LocalStack() as stack:
            jobs = stack.jobs_client()        # aiplatform_v1.JobServiceClient (REST)
            gcs = stack.storage_client()      # google.cloud.storage.Client

    Args:
        project: the project id the service accepts (besides any project number).
        location: the default location of `client()`.
        timing: how fast jobs move (zero by default: as fast as they can).
        seed: seeds the shuffled output order.
        claude_concurrency: Claude jobs allowed to run at once per project.
        claude_over_cap: what a Claude create beyond that cap gets: "reject" (429
            RESOURCE_EXHAUSTED; the cap counts every non-terminal Claude job) or "queue" (the
            job is created and stays PENDING until a running one ends).
        log_dir: where fake-gcs-server's log goes (default: a temporary directory removed on
            stop).
        port: the Vertex REST service's loopback port (0, the default: a free one).
        gcs_port: fake-gcs-server's loopback port (0, the default: a free one). Fixed ports
            keep the endpoints, and so the exported environment, the same across restarts.
        models: the model catalogue, model ids by publisher ("anthropic", "google"), served
            everywhere; a create or online call naming another model fails (default: the
            models the project's tests and docs use, `DEFAULT_MODELS`, everywhere, and
            vertexbatch's model catalogue in the locations it lists: docs/local-stack.md, "The
            model catalogue"). `add_model` extends it.
        unknown_model_code: the HTTP code of that failure (404 NOT_FOUND, as Vertex answers).
        job_options: the output options of every job (default `JobOptions()`); the same as
            calling `set_job_options(job_options)` once started.
        bigquery: also start a BigQuery server (bqemulator, the `bigquery-local` extra), read
            and written by BigQuery jobs and reached by `bigquery_client()`; without it a
            BigQuery create gets a 400 saying how to get one.
        bigquery_port, bigquery_grpc_port: its REST and gRPC loopback ports (0: free ones).
        locations: locations served besides `DEFAULT_LOCATIONS` (a call under another is a
            400, as Vertex refuses a location it does not serve); `add_location` extends it.
        state_dir: keep jobs and GCS objects here, across restarts (`_state.py`: a job not
            terminal at stop ends FAILED on the next start). None, the default: everything
            is in memory and gone when the stack stops.
    """

    def __init__(
        self,
        project: str = "local-project",
        location: str = "us-central1",
        timing: Timing | None = None,
        seed: int = 0,
        claude_concurrency: int = 4,
        log_dir: str | Path | None = None,
        port: int = 0,
        gcs_port: int = 0,
        models: Mapping[str, Iterable[str]] | None = None,
        unknown_model_code: int = 404,
        claude_over_cap: Literal["reject", "queue"] = "reject",
        job_options: JobOptions | None = None,
        bigquery: bool = False,
        bigquery_port: int = 0,
        bigquery_grpc_port: int = 0,
        locations: Iterable[str] = (),
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if claude_over_cap not in ("reject", "queue"):
            raise ValueError('claude_over_cap must be "reject" or "queue"')
        self.claude_over_cap = claude_over_cap
        self.job_options = job_options or JobOptions()
        self.project = project
        self.catalogue = Catalogue(models, unknown_model_code)
        self.locations = Locations([*locations, *self.catalogue.listed_locations()])
        if location not in self.locations.names():
            self.locations.add(location)
        self.location = location
        self.project_number = PROJECT_NUMBER
        self.timing = timing or Timing()
        self.seed = seed
        self.claude_concurrency = claude_concurrency
        self.faults = Faults()
        self._log_dir = Path(log_dir) if log_dir is not None else None
        self.state_dir = Path(state_dir) if state_dir is not None else None
        named = (
            ("port", port),
            ("gcs_port", gcs_port),
            ("bigquery_port", bigquery_port),
            ("bigquery_grpc_port", bigquery_grpc_port),
        )
        for name, value in named:
            if type(value) is not int or not 0 <= value <= 65535:
                raise ValueError(f"{name} must be a port number from 0 to 65535, got {value!r}")
        fixed = [value for _, value in named if value]
        if len(fixed) != len(set(fixed)):
            raise ValueError(f"the fixed ports must differ, got {fixed}")
        self._port = port
        self._gcs_port = gcs_port
        self._bigquery_wanted = bigquery
        self._bigquery_ports = (bigquery_port, bigquery_grpc_port)
        self._bigquery_server: BigQueryServer | None = None
        self._temp_dir: Path | None = None
        self._gcs: GcsServer | None = None
        self._rest: RestServer | None = None
        self._store: JobStore | None = None
        self._service: Service | None = None

    @classmethod
    def from_probe_report(cls, path: str | os.PathLike[str], **kwargs: Any) -> LocalStack:
        """A stack whose jobs behave as a `vertexbatch probe` report says the real service did.

        The report's facts set `job_options` and `timing` (docs/local-stack.md lists which
        fact sets what); `kwargs` are the other `LocalStack` arguments (a `timing` given there
        keeps its pacing and takes the report's queue).

        Raises:
            ValueError: the file is not a probe report.
        """
        from vertexbatch.emulator._report import load_report, options_from_report

        options, timing = options_from_report(load_report(path))
        given = kwargs.pop("timing", None)
        if isinstance(given, Timing):
            timing = replace(
                given, queued_seconds=timing.queued_seconds, queued_at=timing.queued_at
            )
        return cls(timing=timing, job_options=options, **kwargs)

    # Lifecycle.

    def start(self) -> LocalStack:
        """Start both servers (the context manager calls this)."""
        if self._rest is not None:
            raise RuntimeError("LocalStack is already started")
        for port in (self._port, self._gcs_port, *self._bigquery_ports):
            _check_free(port)
        if self._bigquery_wanted:
            require_bigquery()
        try:
            if self._log_dir is None:
                self._temp_dir = Path(tempfile.mkdtemp(prefix="vertexbatch-stack-"))
                log_dir = self._temp_dir
            else:
                log_dir = self._log_dir
                log_dir.mkdir(parents=True, exist_ok=True)
            state = self.state_dir
            if state is not None:
                (state / "gcs").mkdir(parents=True, exist_ok=True)
            gcs_root = state / "gcs" if state is not None else None
            self._gcs = start_gcs(log_dir / "fake-gcs-server.log", self._gcs_port, gcs_root)
            if self._bigquery_wanted:
                rest, grpc = self._bigquery_ports
                self._bigquery_server = start_bigquery(
                    log_dir, project=self.project, rest_port=rest, grpc_port=grpc
                )
            bigquery = self.bigquery_client if self._bigquery_server is not None else None
            self._store = JobStore(
                project=self.project,
                project_number=self.project_number,
                timing=self.timing,
                seed=self.seed,
                claude_concurrency=self.claude_concurrency,
                faults=self.faults,
                runner=make_runner(
                    self.storage_client, make_lifecycle(self.storage_client, bigquery)
                ),
                catalogue=self.catalogue,
                locations=self.locations,
                claude_over_cap=self.claude_over_cap,
                admit=make_admit(bigquery),
                state_path=state / JOBS_FILE if state is not None else None,
            )
            self._store.set_job_options(self.job_options)
            self._service = Service(self._store, self.storage_client, self.location)
            self._rest = RestServer(self._service, self._port)
            self._rest.start()
            # A stack someone forgot to stop still takes fake-gcs-server down at exit.
            atexit.register(self.stop)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the REST service, the job runners, fake-gcs-server and bqemulator; safe to call
        twice."""
        atexit.unregister(self.stop)
        self.faults.unblock(drop=True)  # a call held by `block` must not keep its thread alive
        try:
            if self._rest is not None:
                self._rest.close()
            if self._store is not None:
                self._store.close()
        finally:
            self._rest = None
            if self._gcs is not None:
                self._gcs.stop()
                self._gcs = None
            if self._bigquery_server is not None:
                self._bigquery_server.stop()
                self._bigquery_server = None
            if self._temp_dir is not None:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _running(self) -> tuple[GcsServer, RestServer, JobStore, Service]:
        if self._gcs is None or self._rest is None or self._store is None or not self._service:
            raise RuntimeError("LocalStack is not started")
        return self._gcs, self._rest, self._store, self._service

    # Endpoints and clients.

    @property
    def vertex_endpoint(self) -> str:
        """The Vertex REST service, `http://127.0.0.1:PORT`."""
        return self._running()[1].url

    @property
    def storage_endpoint(self) -> str:
        """fake-gcs-server, `http://127.0.0.1:PORT` (the value for STORAGE_EMULATOR_HOST)."""
        return self._running()[0].url

    @property
    def gcs_pid(self) -> int:
        """The fake-gcs-server process id (tests check it is gone after stop)."""
        return self._running()[0].process.pid

    def environment(self, bucket: str, prefix: str | None = None) -> dict[str, str]:
        """The variables that point `vertexbatch.Client.from_env` and the command at this stack.

        Without `prefix` no VERTEXBATCH_PREFIX is set: readers use the default prefix, the one
        `client()` uses too. With BigQuery: BIGQUERY_EMULATOR_HOST (google-cloud-bigquery reads
        it) and VERTEXBATCH_BIGQUERY_STORAGE_HOST (the Storage API's gRPC endpoint) as well.
        """
        env = {
            STORAGE_ENDPOINT.variable: self.storage_endpoint,
            VERTEX_ENDPOINT.variable: self.vertex_endpoint,
            PROJECT.variable: self.project,
            LOCATION.variable: self.location,
            BUCKET.variable: bucket,
        }
        if prefix is not None:
            env[PREFIX.variable] = prefix
        env.update(self.bigquery_environment())
        return env

    def create_bucket(self, name: str) -> None:
        """Create a bucket on fake-gcs-server unless it exists."""
        client = self.storage_client()
        if client.lookup_bucket(name) is not None:
            return
        with contextlib.suppress(api_exceptions.Conflict):
            client.create_bucket(name)

    def client(
        self,
        bucket: str = "vertexbatch-local",
        *,
        prefix: str = DEFAULT_PREFIX,
        meter_provider: MeterProvider | None = None,
        retry: RetryPolicy | None = None,
    ) -> Client:
        """A `vertexbatch.Client` bound to the stack (the bucket is created if missing).

        Its default prefix is the library's (`vertexbatch`), so `Client.from_env` and the
        command, pointed here by `environment(bucket)`, find the jobs it makes. As theirs, its
        retry policy (`retry`, default `RetryPolicy()`) makes a refused connection final at
        once: a stopped stack is an error with a hint, not a minute of retries.
        """
        self.create_bucket(bucket)
        return Client.for_endpoints(
            vertex_endpoint=self.vertex_endpoint,
            storage_endpoint=self.storage_endpoint,
            project=self.project,
            location=self.location,
            bucket=bucket,
            prefix=prefix,
            meter_provider=meter_provider,
            # The loopback rule of Client.from_env (`_config.local_retry`): refused is final.
            retry=replace(retry or RetryPolicy(), retry_refused=False),
            bigquery_storage_endpoint=self.bigquery_environment().get(BIGQUERY_STORAGE_HOST),
        )

    # Scripting and inspection.

    def add_model(self, publisher: str, model: str, locations: Iterable[str] | None = None) -> None:
        """Serve one more model: `add_model("anthropic", "claude-haiku-4-5")` (a bare id; with
        `@version`, only that version), in every location or only in `locations` (elsewhere a
        create or online call gets the catalogue's 404, as for a model a region lacks)."""
        self.catalogue.add(publisher, model, locations)

    def add_location(self, location: str) -> None:
        """Serve one more location (`LocalStack(locations=...)` at start)."""
        self.locations.add(location)

    def models(self) -> dict[str, tuple[str, ...]]:
        """The model catalogue now: model ids by publisher."""
        return self.catalogue.models()

    def set_job_options(self, options: JobOptions, display_name: str | None = None) -> None:
        """Output options for jobs created from now on (display_name None: every job)."""
        self._running()[2].set_job_options(options, display_name)

    def wait_job(
        self,
        name: str,
        timeout: float = 30.0,
        *,
        until: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Block until the job (name or id) is terminal and return its JSON (no polling).

        Args:
            name: the job's resource name or bare id.
            timeout: seconds to wait.
            until: wait for this predicate on the job's JSON instead of a terminal state, e.g.
                `lambda j: j.get("completionStats", {}).get("successfulCount") == "3"`.

        Raises:
            KeyError: no such job.
            TimeoutError: not there within timeout.
        """
        return self._running()[2].wait_job(name, timeout, until)

    def settle(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Block until every job of the stack is terminal and return them all (no polling).

        Held jobs (`faults.hold`) are not terminal until released or cancelled, so release them
        first. A job created while waiting is waited for too.

        Raises:
            TimeoutError: some job is still live after `timeout` seconds; the message names it.
        """
        ends = time.monotonic() + timeout
        while True:
            jobs = self.jobs()
            live = [job["name"] for job in jobs if job["state"] not in TERMINAL]
            if not live:
                return jobs
            for name in live:
                try:
                    self.wait_job(name, max(ends - time.monotonic(), 0.0))
                except KeyError:  # deleted meanwhile: nothing left to wait for
                    continue
                except TimeoutError:
                    raise TimeoutError(f"job {name} is still live after {timeout} s") from None

    def calls(self) -> Counter[str]:
        """Vertex REST calls served, by operation ("create", "get", "list", "cancel", ...)."""
        return self._running()[3].calls()

    def reset_calls(self) -> None:
        """Forget the call counts and the online request bodies received."""
        self._running()[3].reset_calls()

    def received(self, op: str) -> list[Any]:
        """The JSON bodies of the online calls served since `reset_calls`, in arrival order.

        `op` is "rawPredict" (Claude) or "generateContent" (Gemini); the last 10,000 of each are
        kept. For tests of what a client sends: the bodies are the test's own request content.
        """
        return self._running()[3].received(op)

    def jobs(self) -> list[dict[str, Any]]:
        """A snapshot of every job's JSON, in creation order."""
        return self._running()[2].snapshot()


def _check_free(port: int) -> None:
    """Raise ``OSError`` naming ``port`` unless the stack can listen there (0: no check); it is
    ``errno.EADDRINUSE`` when something else does.

    Both servers reuse addresses, so a port a stopped stack left in TIME_WAIT counts as free.
    """
    if not port:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                message = f"127.0.0.1:{port} is already in use"
            else:
                message = f"cannot listen on 127.0.0.1:{port}: {exc.strerror}"
            raise OSError(exc.errno, message) from None
