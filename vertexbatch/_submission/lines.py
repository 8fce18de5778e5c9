"""A submission's requests turned into staged lines, one at a time and before any cloud call:
each request's type and key checked, its line built by its provider's row, counted for a
``progress=`` callback; a ``BigQuerySource``'s rows read as requests first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .._bigquery.source import (
    BigQuerySource,
    ChatRequests,
    ClaudeRequests,
    GeminiRequests,
    Share,
    SourceRows,
    check_source_extra,
)
from .._cloud import Cloud
from .._errors import InvalidRequestError
from .._observe.progress import Meter
from .._providers import PROVIDERS
from .._requests.lines import StagedLine
from .._rules import check_key
from .._schemas.check import Schema
from .._values import ChatRequest, ClaudeRequest, EmbeddingRequest, GeminiRequest, Provider
from .options import SubmitOptions

__all__ = ["request_lines", "source_requests", "staged_lines"]


def staged_lines(
    requests: Iterable[Any],
    expected: type[ClaudeRequest]
    | type[GeminiRequest]
    | type[EmbeddingRequest]
    | type[ChatRequest],
    build: Callable[..., StagedLine],
    schema: Schema | None = None,
) -> Iterator[StagedLine]:
    """Validate each request's type and key, then build its line (with ``schema``, the answer
    schema written in); one request at a time.

    ``requests`` itself is checked now, before any cloud call; its items as they are taken.
    """
    if isinstance(requests, str | bytes | Mapping) or not isinstance(requests, Iterable):
        raise InvalidRequestError(
            f"requests must be an iterable of {expected.__name__}, got {type(requests).__name__}",
            field="requests",
        )
    return _built_lines(requests, expected, build, schema)


def _built_lines(
    requests: Iterable[Any],
    expected: type[ClaudeRequest]
    | type[GeminiRequest]
    | type[EmbeddingRequest]
    | type[ChatRequest],
    build: Callable[..., StagedLine],
    schema: Schema | None,
) -> Iterator[StagedLine]:
    from .._requests.importer_types import FieldTypes

    seen: set[str] = set()
    types = FieldTypes()  # a field's type must not differ between the lines (Vertex's importer)
    for request in requests:
        if not isinstance(request, expected):
            raise InvalidRequestError(
                f"expected {expected.__name__} items, got {type(request).__name__}",
                field="requests",
            )
        check_key(request.key, seen)
        yield build(request, types, schema)


def request_lines(
    cloud: Cloud,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    options: SubmitOptions,
    meter: Meter | None,
    share: Share | None = None,
) -> tuple[Iterator[StagedLine], SourceRows | None]:
    """The requests' staged lines, built as they are taken and counted by ``meter``, and the
    reading of a ``BigQuerySource`` (which records the table), else ``None``; ``share``: a
    run task's share of the table, at the run's snapshot."""
    taken, read = source_requests(cloud, provider, requests, share)
    row = PROVIDERS[provider]
    lines = staged_lines(taken, row.request, row.builder(options.check_fields), options.schema)
    return (lines if meter is None else meter.counted(lines, _line_size)), read


def source_requests(
    cloud: Cloud,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    share: Share | None = None,
) -> tuple[Iterable[Any], SourceRows | None]:
    """``requests`` as they are, or a ``BigQuerySource``'s rows as requests (``SourceRows``:
    read once, when the first request is taken) and the reading, which records the table."""
    if not isinstance(requests, BigQuerySource):
        return requests, None
    check_source_extra()  # before any cloud call: the table cannot be read without it
    if cloud.bigquery is None:
        raise InvalidRequestError(
            "this client has no BigQuery Storage Read client", field="requests"
        )
    read = SourceRows(requests, provider, cloud.bigquery.client, cloud.project, cloud.retry, share)
    return read.requests(), read


def _line_size(line: StagedLine) -> int:
    return len(line.data)
