"""The public functions that take a ``Client``: ``list_request_files(client, prefix)``, and
``wait(client, job)``, deprecated for ``client.wait(job)``.

They sit above ``_client`` (as ``_aio`` does), so they know a ``Client`` as itself: anything else
is refused (``require_client``) before it is used, naming the right call.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import datetime

from ._client import Client
from ._errors import InvalidRequestError
from ._submission.request_files import RequestFiles, request_files_under
from ._values import Job, Status

__all__ = ["list_request_files", "require_client", "wait"]


def require_client(value: object, how: str) -> Client:
    """``value`` if it is a ``Client``, refused before it is used (a swapped argument, say).

    Raises:
        InvalidRequestError: ``value`` is not a ``vertexbatch.Client`` (``field == "client"``);
            ``how`` is the right call, for the message.
    """
    if not isinstance(value, Client):
        raise InvalidRequestError(
            f"client must be a vertexbatch.Client, not {type(value).__name__}: {how}",
            field="client",
        )
    return value


def list_request_files(client: Client, prefix: str) -> RequestFiles:
    """The request files under ``prefix`` (``gs://bucket/path/``), sorted by name: one listing,
    every page, through the client's storage client and retry policy.

    Every object under the prefix is a request file (those in folders below it too), but for
    folder placeholders (names ending in ``/``). Take a task's share with ``.share(task)``.

    Raises:
        InvalidRequestError: ``client`` is not a ``vertexbatch.Client`` (``field ==
            "client"``), ``prefix`` is not a ``gs://bucket/path`` URI (``field == "uri"``),
            or no file is under it (``field == "requests"``).
    """
    given = require_client(client, "list_request_files(client, 'gs://bucket/path/')")
    return request_files_under(given._cloud.staging, prefix)


def wait(
    client: Client,
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
    """Deprecated: use ``client.wait(job, ...)`` (this warns with ``DeprecationWarning``, and
    goes in a later release); the same arguments, result and errors, and
    ``InvalidRequestError`` when ``client`` is not a ``Client``."""
    given = require_client(client, "call client.wait(job)")
    warnings.warn(
        "vertexbatch.wait(client, job) is deprecated: use client.wait(job)",
        DeprecationWarning,
        stacklevel=2,
    )
    return given.wait(
        job,
        deadline=deadline,
        timeout=timeout,
        floor=floor,
        ceiling=ceiling,
        on_progress=on_progress,
        sleep=sleep,
        now=now,
    )
