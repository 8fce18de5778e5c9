"""A client's lifecycle: the clients it built (and so closes), and its refusal once closed.

A ``Client`` is handed its Vertex, storage and online clients, or builds them. ``close()``
closes those it built, in the reverse order, and the thread pool of its ``aio`` view; never one
the caller handed in (the caller owns it, and may share it). After ``close()`` every call of the
client, of its ``aio`` view and of a results iterator it returned raises ``RuntimeError``
(``closed_error``) before any cloud call; closing again does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from ._bigquery.read import endpoint_read_client
from ._hosts import vertex_host

if TYPE_CHECKING:
    from google.cloud import aiplatform_v1, bigquery_storage_v1, storage

__all__ = ["ASYNC_WITH", "Lifecycle", "closed_error", "endpoint_clients"]

T = TypeVar("T")

# The one message of a blocking client in ``async with`` and of its async view in ``with``:
# as in google-genai, the client is blocking and ``client.aio`` is its async view.
ASYNC_WITH = (
    "{what} is not {how} context manager: use 'async with client.aio as aio:' in async code "
    "(it closes the client at its end), or 'with client:' in blocking code"
)


def closed_error() -> RuntimeError:
    """What a call on a closed client raises."""
    return RuntimeError(
        "this vertexbatch.Client is closed (by close(), aclose() or the end of its with block): "
        "make a new client to go on"
    )


class Lifecycle:
    """What one client must close, and whether it is closed; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closers: list[Callable[[], None]] = []
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def own(self, close: Callable[[], None]) -> None:
        """Close this with the client: ``close`` frees something the client built."""
        with self._lock:
            if self._closed:
                close()
                raise closed_error()
            self._closers.append(close)

    def check(self) -> None:
        """Raise ``closed_error()`` if the client is closed."""
        if self._closed:
            raise closed_error()

    def guard(self, items: Iterator[T]) -> Iterator[T]:
        """``items``, refused from the first item asked for after the client closed; closing
        this closes ``items`` (ending its span)."""
        try:
            while True:
                if self._closed:  # ``check``, inline: once per item of a results pass
                    raise closed_error()
                try:
                    item = next(items)
                except StopIteration:
                    return
                yield item
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def close(self) -> None:
        """Mark the client closed and close what it owns, newest first; again, nothing.

        Every closer runs even when one fails; the first failure is raised after them.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            closers, self._closers = self._closers[::-1], []
        failure: BaseException | None = None
        for close in closers:
            try:
                close()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def jobs(
        self, given: aiplatform_v1.JobServiceClient | None, location: str
    ) -> aiplatform_v1.JobServiceClient:
        """``given``, or a REST client on the location's Vertex host (``_hosts.vertex_host``:
        regional, multi-region or global) with application default credentials, closed with
        the client."""
        if given is not None:
            return given
        from ._deferred.aiplatform import job_service

        built = job_service().JobServiceClient(
            transport="rest", client_options={"api_endpoint": vertex_host(location)}
        )
        self.own(built.transport.close)
        return built

    def storage(self, given: storage.Client | None, project: str) -> storage.Client:
        """``given``, or a storage client for ``project``, closed with the client."""
        if given is not None:
            return given
        from google.cloud import storage as gcs

        built = gcs.Client(project=project)
        self.own(built.close)
        return built


def endpoint_clients(
    vertex_endpoint: str, storage_endpoint: str, project: str, bigquery_storage: str | None = None
) -> tuple[
    aiplatform_v1.JobServiceClient, storage.Client, bigquery_storage_v1.BigQueryReadClient | None
]:
    """A Vertex, a storage and (given its gRPC ``host:port``) a Storage Read client for explicit
    endpoints with anonymous credentials (the local stack's way in); the caller makes them its
    own (``Lifecycle.own``)."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage as gcs

    from ._deferred.aiplatform import job_service

    anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]
    jobs = job_service().JobServiceClient(
        transport="rest",
        credentials=anonymous,
        client_options={"api_endpoint": vertex_endpoint},
    )
    store = gcs.Client(
        project=project, credentials=anonymous, client_options={"api_endpoint": storage_endpoint}
    )
    return jobs, store, endpoint_read_client(bigquery_storage)
